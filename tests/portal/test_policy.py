"""The workflow policy's machinery (portal.policy) on a table of its own: who first (403), then the state (409),
then the reason (400), then the precondition (its own code); buttons disabled with why; a table that names a
state its object does not have does not load."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from portal.errors import ApplicationError, ConflictError, NotAllowedError
from portal.policy import Actor, Policy, Ready, Rule


@dataclass
class Door:
    pk: int
    status: str
    locked_by: str = ""


@dataclass
class Person:
    name: str
    is_authenticated: bool = True
    is_active: bool = True


KEEPER = Actor("keeper", "the keeper", lambda user, door: user.name == "keeper")
ANYONE = Actor("anyone", "anyone signed in", lambda user, door: True)


def _unlocked(door: Door) -> Ready:
    if door.locked_by:
        raise ConflictError(f"Locked by {door.locked_by}.", code="door-locked")
    return Ready(fields={"opened": True})


DOOR = Policy(
    name="door",
    states=("shut", "open"),
    rules=(
        Rule("open", ("shut",), (ANYONE,), "Open", target="open", done="opened", precondition=_unlocked),
        Rule("close", ("open",), (KEEPER,), "Close", target="shut", done="closed", reason_required=True),
        Rule("knock", ("shut",), (ANYONE,), "Knock"),
    ),
)


def test_who_is_asked_before_the_state_and_the_state_before_the_reason():
    with pytest.raises(NotAllowedError) as who:
        DOOR.require(Person("visitor"), Door(1, "shut"), "close")  # wrong person AND wrong state: 403 first
    assert who.value.status_code == 403 and who.value.code == "permission_denied"
    assert "Only the keeper can close." == who.value.detail
    with pytest.raises(ConflictError) as state:
        DOOR.require(Person("keeper"), Door(1, "shut"), "close")  # no reason either: 409 first
    assert state.value.code == "state-conflict" and state.value.extra == {"status": "shut", "action": "close"}
    with pytest.raises(ApplicationError) as reason:
        DOOR.require(Person("keeper"), Door(1, "open"), "close", reason="  ")
    assert reason.value.code == "invalid"
    assert DOOR.require(Person("keeper"), Door(1, "open"), "close", reason="night") == Ready()


def test_a_write_beside_the_object_says_when_it_is_open():
    with pytest.raises(ConflictError) as closed:
        DOOR.require(Person("visitor"), Door(7, "open"), "knock")
    assert closed.value.detail == "Door #7 is open: knock is closed in that state (open while it is shut)."


def test_the_precondition_has_its_own_code_and_disables_the_button():
    with pytest.raises(ConflictError) as locked:
        DOOR.require(Person("visitor"), Door(1, "shut", locked_by="keeper"), "open")
    assert locked.value.code == "door-locked"
    buttons = DOOR.allowed_actions(Person("visitor"), Door(1, "shut", locked_by="keeper"))
    assert [(b.action, b.enabled, b.blocked_code) for b in buttons] == [
        ("open", False, "door-locked"),
        ("knock", True, ""),
    ]
    assert DOOR.require(Person("visitor"), Door(1, "shut"), "open").fields == {"opened": True}


def test_anonymous_and_inactive_users_are_nobody():
    for user in (None, Person("keeper", is_authenticated=False), Person("keeper", is_active=False)):
        assert not DOOR.allowed(user, Door(1, "open"), "close")
    assert DOOR.allowed(Person("keeper"), Door(1, "open"), "close")
    assert not DOOR.allowed(Person("keeper"), Door(1, "shut"), "close")  # the state, whoever asks
    assert DOOR.state_allows(Door(1, "shut"), "knock") and not DOOR.state_allows(Door(1, "open"), "knock")


def test_an_unknown_action_is_refused_with_a_code():
    with pytest.raises(ApplicationError) as unknown:
        DOOR.require(Person("keeper"), Door(1, "open"), "paint")
    assert unknown.value.code == "unknown-action"


def test_a_table_naming_a_state_its_object_lacks_does_not_load():
    with pytest.raises(ValueError, match="unknown states"):
        Policy(
            name="door", states=("shut",), rules=(Rule("open", ("shut",), (ANYONE,), "Open", target="ajar"),)
        )
    with pytest.raises(ValueError, match="one row per action"):
        Policy(
            name="door",
            states=("shut",),
            rules=(Rule("x", (), (ANYONE,), "X"), Rule("x", (), (ANYONE,), "X")),
        )
