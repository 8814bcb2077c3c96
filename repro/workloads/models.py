"""The CNNs the workloads train: ImageNet models from tf.keras.applications and the CIFAR ResNets.

CIFAR ResNet-20/32/56 follow He et al. 2015 (section 4.2): a 3x3 convolution with 16 filters, three
stages of n basic blocks with 16, 32 and 64 filters (stride 2 at the start of stages 2 and 3), global
average pooling and a dense classifier; depth = 6n + 2. Shortcuts are identities, downsampled and
zero-padded where the shape changes (the paper's option A, parameter-free: 0.27M parameters for
ResNet-20). Every model returns logits (no softmax), so the loss can run in float32 under mixed precision.
TensorFlow is imported inside the builders: the tables here are importable without it.
"""

from __future__ import annotations

from typing import Any

KERAS_APPLICATIONS = {
    "resnet50": "ResNet50",
    "resnet101": "ResNet101",
    "resnet152": "ResNet152",
    "inception3": "InceptionV3",
    "vgg16": "VGG16",
    "vgg19": "VGG19",
}
CIFAR_RESNET_BLOCKS = {"resnet20": 3, "resnet32": 5, "resnet56": 9}
MODELS = tuple(KERAS_APPLICATIONS) + tuple(CIFAR_RESNET_BLOCKS)
# Smallest input each keras.applications model accepts.
_MIN_IMAGE_SIZE = {"inception3": 75}


def default_image_size(model: str) -> int:
    """The image side a model is usually trained at: 224, 299 for Inception-v3, 32 for CIFAR."""
    if model in CIFAR_RESNET_BLOCKS:
        return 32
    return 299 if model == "inception3" else 224


def default_num_classes(model: str) -> int:
    """1000 (ImageNet), or 10 for the CIFAR ResNets."""
    return 10 if model in CIFAR_RESNET_BLOCKS else 1000


def min_image_size(model: str) -> int:
    """The smallest image side the model's architecture accepts."""
    return _MIN_IMAGE_SIZE.get(model, 32)


def build(model: str, image_size: int, num_classes: int, data_format: str = "NHWC") -> Any:
    """A fresh, randomly initialised tf.keras model `model` mapping images to logits."""
    import tensorflow as tf

    channels_first = data_format == "NCHW"
    shape = (3, image_size, image_size) if channels_first else (image_size, image_size, 3)
    if model in CIFAR_RESNET_BLOCKS:
        return cifar_resnet(CIFAR_RESNET_BLOCKS[model], shape, num_classes, channels_first, name=model)
    if model not in KERAS_APPLICATIONS:
        raise ValueError(f"unknown model {model!r}")
    tf.keras.backend.set_image_data_format("channels_first" if channels_first else "channels_last")
    constructor = getattr(tf.keras.applications, KERAS_APPLICATIONS[model])
    return constructor(
        weights=None, input_shape=shape, classes=num_classes, classifier_activation=None, include_top=True
    )


def cifar_resnet(blocks: int, shape: tuple[int, int, int], num_classes: int, channels_first: bool, name: str) -> Any:
    """He et al.'s CIFAR ResNet with `blocks` basic blocks per stage (depth 6*blocks + 2)."""
    import tensorflow as tf

    layers = tf.keras.layers
    fmt = "channels_first" if channels_first else "channels_last"
    axis = 1 if channels_first else -1
    init = "he_normal"  # a name, not a shared instance: each layer gets its own initializer

    def conv(filters: int, stride: int, label: str) -> Any:
        return layers.Conv2D(
            filters,
            3,
            strides=stride,
            padding="same",
            use_bias=False,
            kernel_initializer=init,
            data_format=fmt,
            name=label,
        )

    def bn(label: str) -> Any:
        return layers.BatchNormalization(axis=axis, momentum=0.9, epsilon=1e-5, name=label)

    def shortcut(x: Any, filters: int, stride: int) -> Any:
        if stride == 1 and x.shape[axis] == filters:
            return x
        extra = filters - x.shape[axis]

        def downsample(t: Any) -> Any:
            if channels_first:
                t = t[:, :, ::stride, ::stride]
                return tf.pad(t, [[0, 0], [extra // 2, extra - extra // 2], [0, 0], [0, 0]])
            t = t[:, ::stride, ::stride, :]
            return tf.pad(t, [[0, 0], [0, 0], [0, 0], [extra // 2, extra - extra // 2]])

        return layers.Lambda(downsample)(x)

    inputs = tf.keras.Input(shape=shape, name="images")
    x = layers.Activation("relu")(bn("bn0")(conv(16, 1, "conv0")(inputs)))
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            prefix = f"s{stage + 1}b{block + 1}"
            y = layers.Activation("relu")(bn(prefix + "_bn1")(conv(filters, stride, prefix + "_conv1")(x)))
            y = bn(prefix + "_bn2")(conv(filters, 1, prefix + "_conv2")(y))
            x = layers.Activation("relu")(layers.Add()([y, shortcut(x, filters, stride)]))
    x = layers.GlobalAveragePooling2D(data_format=fmt)(x)
    logits = layers.Dense(num_classes, kernel_initializer=init, dtype="float32", name="logits")(x)
    return tf.keras.Model(inputs, logits, name=name)


def digits_cnn(num_classes: int = 10) -> Any:
    """A small CNN for scikit-learn's 8x8 digits (about 60k parameters)."""
    import tensorflow as tf

    layers = tf.keras.layers
    inputs = tf.keras.Input(shape=(8, 8, 1), name="images")
    x = layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(64, activation="relu")(x)
    logits = layers.Dense(num_classes, dtype="float32", name="logits")(x)
    return tf.keras.Model(inputs, logits, name="digits_cnn")
