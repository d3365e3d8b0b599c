"""Where a record of a plain-text shard ends (`[data] text_records`, `--text-records`): at each line, or at a blank
line (a paragraph). Plain text has no record boundary of its own, so it is the user's choice, never guessed. Kept
apart from the reader so the command line and the configs name the choices without loading pyarrow."""

TEXT_UNITS = ("line", "paragraph")
