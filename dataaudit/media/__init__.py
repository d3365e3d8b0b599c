"""Video and audio: the media fields of a batch probed once with PyAV (bounded: byte cap before reading, header
limits before decoding, a full demux and a decode of the first and last seconds)."""
