"""Evidence that leaves the portal (docs/evidence.md): the parts a third party checks without the portal, in plain
Python with no Django import: RFC 6962 Merkle tree hashing and proofs (merkle), C2SP signed notes, checkpoints and
tlog-proof files (note), the in-toto Statement in a DSSE envelope (dsse), the BagIt layout of an evidence pack (bag),
and `portal verify PACK` (verify)."""
