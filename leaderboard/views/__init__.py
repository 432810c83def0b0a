"""The leaderboard's pages: public (home, boards, compare, a result, a system's history), publication (the
submitter's date, challenges and their resolution), downloads (a result's points and files), buyer (the SLO finder
and the procurement report), extensions (opening an incremental submission), chair (re-checks); panels holds the
parts other apps' pages show."""
