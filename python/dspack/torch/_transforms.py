"""Transforms for the training-loop examples: decode a field's bytes with PIL."""

import io

import numpy as np
import torch


def decode_image(field="jpg", label=None, size=None):
    """A transform: sample -> CHW uint8 tensor of the image in ``field``, or (tensor, label).

    ``label`` is the label field's name (``ds.label_field``); ``size`` (w, h) resizes. PIL
    (Debian python3-pil) decodes; it is imported on first use, so the package does not need it.
    """
    def transform(sample):
        from PIL import Image

        with Image.open(io.BytesIO(bytes(sample[field]))) as im:
            im = im.convert("RGB")
            if size is not None:
                im = im.resize(size)
            t = torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1)
        return (t, sample[label]) if label else t

    return transform
