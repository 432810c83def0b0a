"""Stage 1, read: turn hostile user input into a safe, sandboxed layout of load points.

Archives and folders (inputs/), the input kinds and other tools' importers (kinds/), safe JSON/YAML readers
(loaders), the raw log read under caps (raw_logs) and its format (event_log), checksum manifests (checksums), folders opened without
following links (safedirs) and the JSON Schema check of the descriptors (schema_check). Nothing here judges
a number.
"""
