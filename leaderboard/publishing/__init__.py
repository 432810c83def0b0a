"""The publication workflow: choosing when an audited result goes public and publishing it (services), its frozen
record (snapshot, record), the revisions an extension makes (extensions), challenges, annotations and retractions
(services), re-checks after a rule change (rechecks), the evidence packs and the public log (evidence), and a
system's public name (names). Its tables are leaderboard.workflow. It never imports the public board
(leaderboard.board); what the board must learn from it goes through `signals.public_changed`."""
