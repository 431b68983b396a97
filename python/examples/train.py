#!/usr/bin/python3
"""A complete training loop over a dspack dataset (README.md, docs/python.md; run by
tests/python/test_train_example.py on real JPEGs).

    PYTHONPATH=build/python /usr/bin/python3 python/examples/train.py DATASET [--loader thread]

DATASET: any layout `dspack convert --label-from-dir` wrote from a tree of class folders of
images. Images are decoded with PIL (dspack.torch.decode_image) and resized; the model is a
linear classifier, enough to show the loop.
"""

import argparse

import torch
from torch.utils.data import DataLoader

import dspack.torch as dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--field", default="jpeg", help="the image field (the files' extension)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--size", type=int, default=32, help="images are resized to SIZE x SIZE")
    ap.add_argument("--loader", choices=["dataloader", "thread"], default="dataloader")
    args = ap.parse_args()

    train = dt.MapDataset(args.dataset)
    train.transform = dt.decode_image(args.field, label=train.dataset.label_field,
                                      size=(args.size, args.size))
    classes = len(train.dataset.classes)
    sampler = dt.BalancedDistributedSampler(train)  # rank/world: torch.distributed or RANK/WORLD_SIZE
    if args.loader == "dataloader":
        loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler,
                            num_workers=args.workers, persistent_workers=args.workers > 0,
                            pin_memory=True)
    else:  # the same batches, read in-process with the GIL released
        loader = dt.ThreadLoader(train, batch_size=args.batch_size, sampler=sampler,
                                 threads=args.workers or 1)
    model = torch.nn.Sequential(torch.nn.Flatten(),
                                torch.nn.Linear(3 * args.size * args.size, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, seen = 0.0, 0
        for images, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(images.float() / 255), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(labels)
            seen += len(labels)
        print(f"epoch {epoch}: {seen} samples, loss {total / seen:.4f}")


if __name__ == "__main__":
    main()
