"""Images: the image fields of a batch probed once (bounded Pillow decode), perceptual hashes and near-duplicate
search."""
