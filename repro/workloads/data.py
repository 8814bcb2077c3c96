"""Datasets the workloads read: ImageNet-format TFRecords, scikit-learn's digits, CIFAR-10 batches.

TFRecords hold `image/encoded` (JPEG) and `image/class/label` (int64); files `train-*`, else any
`*.tfrecord*`. Heavy imports (numpy, TensorFlow, scikit-learn) happen inside the functions.
"""

from __future__ import annotations

import glob
import math
import os
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import WorkloadError


def stratified_split(labels: Sequence[int], fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(train, validation) index lists: round(fraction * n_c) of each class c held out, chosen with seed."""
    import numpy as np

    if not 0 < fraction < 1:
        raise WorkloadError(f"--validation-fraction must be between 0 and 1, got {fraction}")
    labels = np.asarray(labels)
    rng = np.random.RandomState(seed)
    train: list[int] = []
    validation: list[int] = []
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        rng.shuffle(members)
        held = round(fraction * len(members))
        validation.extend(int(i) for i in members[:held])
        train.extend(int(i) for i in members[held:])
    return sorted(train), sorted(validation)


def epoch_shard(count: int, epoch: int, seed: int, rank: int, size: int) -> Any:
    """Positions (into the training set of `count` examples) rank `rank` trains on in `epoch`.

    Shuffle with the epoch's seed (the same on every rank), drop the count % size tail, take every
    size-th position: shards are disjoint, of equal length, and together cover all but < size."""
    import numpy as np

    order = np.random.RandomState(seed + 1000003 * (epoch + 1)).permutation(count)
    usable = count - count % size
    return order[:usable][rank::size]


def steps_per_epoch(count: int, size: int, batch: int) -> int:
    """Steps each rank takes per epoch (the last batch may be partial, the same on every rank)."""
    return math.ceil((count // size) / batch)


def tfrecord_files(directory: str, prefix: str = "train") -> list[str]:
    """`prefix-*` files in directory, else every `*.tfrecord*` file; sorted."""
    files = sorted(glob.glob(os.path.join(directory, f"{prefix}-*")))
    if not files:
        files = sorted(glob.glob(os.path.join(directory, "*.tfrecord*")))
    return [f for f in files if os.path.isfile(f)]


def decode_example(record: Any, image_size: int, label_offset: int) -> tuple[Any, Any]:
    """One serialized ImageNet-format Example -> (float32 HWC image in [0, 1], int32 label)."""
    import tensorflow as tf

    features = tf.io.parse_single_example(
        record,
        {
            "image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.io.decode_jpeg(features["image/encoded"], channels=3)
    image = tf.image.resize(image, [image_size, image_size]) / 255.0
    label = tf.cast(features["image/class/label"], tf.int32) - label_offset
    return image, label


def tfrecord_dataset(
    files: Sequence[str],
    rank: int,
    size: int,
    batch: int,
    image_size: int,
    label_offset: int,
    channels_first: bool,
    seed: int,
) -> Any:
    """Endless, shuffled batches of this rank's part of the records (by file when there are enough)."""
    import tensorflow as tf

    autotune = tf.data.AUTOTUNE
    by_file = len(files) >= size
    ds = tf.data.Dataset.from_tensor_slices(list(files))
    if by_file:
        ds = ds.shard(size, rank)
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)), num_parallel_calls=autotune)
    if not by_file:
        ds = ds.shard(size, rank)
    ds = ds.shuffle(1024, seed=seed + rank)
    ds = ds.map(lambda r: decode_example(r, image_size, label_offset), num_parallel_calls=autotune)
    if channels_first:
        ds = ds.map(lambda x, y: (tf.transpose(x, [2, 0, 1]), y), num_parallel_calls=autotune)
    return ds.batch(batch, drop_remainder=True).prefetch(autotune)


@dataclass
class ArrayData:
    """A dataset held in memory as numpy arrays (NHWC float32 images, int labels)."""

    name: str
    x_train: Any
    y_train: Any
    x_val: Any
    y_val: Any
    augment: bool = False
    split: dict[str, Any] = field(default_factory=dict)

    @property
    def train_size(self) -> int:
        return len(self.y_train)

    @property
    def validation_size(self) -> int:
        return len(self.y_val)

    def steps(self, size: int, batch: int) -> int:
        return steps_per_epoch(self.train_size, size, batch)

    def shard(self, epoch: int, seed: int, rank: int, size: int) -> Any:
        return epoch_shard(self.train_size, epoch, seed, rank, size)

    def train_batches(self, epoch: int, seed: int, rank: int, size: int, batch: int) -> Iterator[tuple[Any, Any]]:
        import numpy as np

        positions = self.shard(epoch, seed, rank, size)
        rng = np.random.RandomState(seed + 7919 * (epoch + 1) + rank)
        for start in range(0, len(positions), batch):
            chosen = positions[start : start + batch]
            x = self.x_train[chosen]
            if self.augment:
                x = _crop_and_flip(x, rng)
            yield x, self.y_train[chosen]

    def validation_batches(self, rank: int, size: int, batch: int) -> Iterator[tuple[Any, Any]]:
        part = range(rank, self.validation_size, size)
        positions = list(part)
        for start in range(0, len(positions), batch):
            chosen = positions[start : start + batch]
            yield self.x_val[chosen], self.y_val[chosen]


def _crop_and_flip(images: Any, rng: Any, pad: int = 4) -> Any:
    """CIFAR augmentation: zero-pad by 4, random 32x32 crop, random horizontal flip (per image)."""
    import numpy as np

    n, h, w, _ = images.shape
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    out = np.empty_like(images)
    dy = rng.randint(0, 2 * pad + 1, n)
    dx = rng.randint(0, 2 * pad + 1, n)
    flip = rng.rand(n) < 0.5
    for i in range(n):
        crop = padded[i, dy[i] : dy[i] + h, dx[i] : dx[i] + w]
        out[i] = crop[:, ::-1] if flip[i] else crop
    return out


@dataclass
class RecordData:
    """ImageNet-format TFRecords read with tf.data (train-* trains, validation-* validates)."""

    name: str
    train_files: list[str]
    val_files: list[str]
    image_size: int
    label_offset: int
    train_size: int
    validation_size: int
    split: dict[str, Any] = field(default_factory=dict)
    augment: bool = True

    def steps(self, size: int, batch: int) -> int:
        # whole batches only: record counts per shard are not known in advance
        steps = self.train_size // (size * batch)
        if steps < 1:
            raise WorkloadError(f"{self.train_size} training records are fewer than one global batch ({size * batch})")
        return steps

    def shard(self, epoch: int, seed: int, rank: int, size: int) -> Any:
        return None

    def _records(self, files: Sequence[str]) -> Any:
        import tensorflow as tf

        # a fixed file order and a deterministic interleave: every rank sees the same record sequence,
        # so shard() gives disjoint parts
        ds = tf.data.Dataset.from_tensor_slices(list(files))
        return ds.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(4, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    def train_batches(self, epoch: int, seed: int, rank: int, size: int, batch: int) -> Iterator[tuple[Any, Any]]:
        import numpy as np
        import tensorflow as tf


        files = list(self.train_files)
        np.random.RandomState(seed + epoch).shuffle(files)
        ds = self._records(files).shard(size, rank).shuffle(10000, seed=seed + 7919 * (epoch + 1) + rank)
        side, offset = self.image_size, self.label_offset
        ds = ds.map(lambda r: decode_example(r, side, offset), num_parallel_calls=tf.data.AUTOTUNE)
        if self.augment:
            ds = ds.map(lambda x, y: (tf.image.random_flip_left_right(x), y), num_parallel_calls=tf.data.AUTOTUNE)
        ds = ds.batch(batch, drop_remainder=True).take(self.steps(size, batch)).prefetch(tf.data.AUTOTUNE)
        yield from ds

    def validation_batches(self, rank: int, size: int, batch: int) -> Iterator[tuple[Any, Any]]:
        import tensorflow as tf


        side, offset = self.image_size, self.label_offset
        ds = self._records(self.val_files).shard(size, rank)
        ds = ds.map(lambda r: decode_example(r, side, offset), num_parallel_calls=tf.data.AUTOTUNE)
        yield from ds.batch(batch).prefetch(tf.data.AUTOTUNE)


def load_digits(validation_fraction: float, split_seed: int) -> ArrayData:
    """scikit-learn's 8x8 digits (pixels 0..16 scaled to 0..1), stratified hold-out."""
    import numpy as np

    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        raise WorkloadError("--dataset digits needs scikit-learn (pip install scikit-learn)") from None
    bunch = sklearn_digits()
    images = (bunch.images / 16.0).astype(np.float32)[..., None]
    labels = bunch.target.astype(np.int32)
    train, validation = stratified_split(labels, validation_fraction, split_seed)
    return ArrayData(
        name="digits",
        x_train=images[train],
        y_train=labels[train],
        x_val=images[validation],
        y_val=labels[validation],
        split={
            "method": "stratified hold-out",
            "seed": split_seed,
            "validation_fraction": validation_fraction,
            "dataset_size": len(labels),
            "train_indices": train,
            "validation_indices": validation,
        },
    )


def load_cifar10(directory: str) -> ArrayData:
    """CIFAR-10's python batches: data_batch_1..5 for training, test_batch held out; per-channel standardised."""
    import numpy as np

    def read(path: str) -> tuple[Any, Any]:
        with open(path, "rb") as handle:
            batch = pickle.load(handle, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return data, np.asarray(batch[b"labels"], dtype=np.int32)

    train_paths = (
        sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.startswith("data_batch_"))
        if os.path.isdir(directory)
        else []
    )
    test_path = os.path.join(directory, "test_batch")
    if not train_paths or not os.path.isfile(test_path):
        raise WorkloadError(f"--dataset cifar10:{directory}: expected data_batch_* and test_batch (python version)")
    parts = [read(p) for p in train_paths]
    x_train = np.concatenate([p[0] for p in parts]).astype(np.float32) / 255.0
    y_train = np.concatenate([p[1] for p in parts])
    x_val, y_val = read(test_path)
    x_val = x_val.astype(np.float32) / 255.0
    mean = x_train.mean(axis=(0, 1, 2))
    std = x_train.std(axis=(0, 1, 2))
    return ArrayData(
        name="cifar10",
        x_train=(x_train - mean) / std,
        y_train=y_train,
        x_val=(x_val - mean) / std,
        y_val=y_val,
        augment=True,
        split={
            "method": "files",
            "train_files": [os.path.basename(p) for p in train_paths],
            "validation_files": ["test_batch"],
        },
    )


def count_records(files: Sequence[str]) -> int:
    """Records in TFRecord files (reads them all: pass --train-examples to skip this for ImageNet)."""
    import tensorflow as tf

    return int(tf.data.TFRecordDataset(list(files)).reduce(tf.constant(0, tf.int64), lambda n, _: n + 1).numpy())


def load_imagenet(directory: str, image_size: int, label_offset: int, train_examples: int | None) -> RecordData:
    """TFRecords train-* (training) and validation-* (held out)."""
    import glob

    train_files = sorted(glob.glob(os.path.join(directory, "train-*")))
    val_files = sorted(glob.glob(os.path.join(directory, "validation-*")))
    if not train_files or not val_files:
        raise WorkloadError(f"--dataset imagenet:{directory}: expected train-* and validation-* TFRecord files")
    return RecordData(
        name="imagenet",
        train_files=train_files,
        val_files=val_files,
        image_size=image_size,
        label_offset=label_offset,
        train_size=train_examples or count_records(train_files),
        validation_size=count_records(val_files),
        split={
            "method": "files",
            "train_files": [os.path.basename(p) for p in train_files],
            "validation_files": [os.path.basename(p) for p in val_files],
        },
    )
