"""Shard writers: one per format, each writing a shard without some of its records, byte for byte in the input's
own layout (the same compression, row groups, member order, line ends). `dataaudit.formats` names the writer of
each format; `clean` writes the cleaned dataset with them and `contamination` the clean subset of a benchmark."""
