"""The cohort calendar: results published "in the next cohort" go out together on the 1st and 3rd Wednesday of
each month at 08:00 US Pacific time (daylight saving handled by the IANA zone)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

COHORT_ZONE = ZoneInfo("America/Los_Angeles")
COHORT_TIME = time(8, 0)


def _wednesdays(year: int, month: int) -> list[date]:
    first = date(year, month, 1)
    offset = (2 - first.weekday()) % 7  # Monday is 0, Wednesday 2
    first_wednesday = first + timedelta(days=offset)
    return [first_wednesday, first_wednesday + timedelta(days=14)]


def cohort_dates(year: int, month: int) -> list[datetime]:
    """The month's two cohort instants, as aware datetimes in UTC."""
    return [
        datetime.combine(day, COHORT_TIME, tzinfo=COHORT_ZONE).astimezone(UTC)
        for day in _wednesdays(year, month)
    ]


def next_cohort(after: datetime) -> datetime:
    """The first cohort instant strictly after `after` (an aware datetime), in UTC."""
    if after.tzinfo is None:
        raise ValueError("next_cohort needs an aware datetime")
    year, month = after.year, after.month
    for _ in range(3):  # this month, or the next, always holds one
        for instant in cohort_dates(year, month):
            if instant > after:
                return instant
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    raise AssertionError("unreachable: every month has two Wednesdays")
