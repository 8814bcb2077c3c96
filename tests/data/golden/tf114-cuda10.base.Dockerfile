# Rebuilt base repro/cuda-base:10.0-cudnn7-devel-ubuntu18.04-7f1ef0ca3718, by repro, for the end-of-life nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04.
# Recipe cuda-10.0-devel-ubuntu18.04 (key 7f1ef0ca3718): repro's own, from the facts in
# docker/cuda_bases.yaml; NVIDIA's retired recipe lives under
# dist/end-of-life/10.0/ubuntu18.04. The 2022 key rotation is applied: each repository's key is
# checked against its pinned fingerprint and named by signed-by.
# Steps: base, labels, tools, repository cuda, repository machine-learning, environment, base packages, runtime packages, devel packages, cudnn packages, hold.

FROM ubuntu:18.04

LABEL org.repro.base.key=7f1ef0ca3718 \
    org.repro.base.recipe=cuda-10.0-devel-ubuntu18.04 \
    org.repro.base.replaces=nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates \
        curl \
        gnupg2 && \
    rm -rf /var/lib/apt/lists/*

# apt repository cuda: key 3BF863CC checked against its pinned fingerprint, signed-by its own keyring
RUN curl -fsSL -o /var/tmp/3bf863cc.pub https://developer.download.nvidia.com/compute/cuda/repos/ubuntu1804/x86_64/3bf863cc.pub && \
    mkdir -p /usr/share/keyrings && \
    gpg --batch --dearmor < /var/tmp/3bf863cc.pub > /usr/share/keyrings/cuda-archive-3bf863cc.gpg && \
    if [ "$(gpg --batch --no-default-keyring --keyring /usr/share/keyrings/cuda-archive-3bf863cc.gpg --with-colons --fingerprint | awk -F: '$1 == "fpr" {print $10; exit}')" != EB693B3035CD5710E231E123A4B469963BF863CC ]; then echo 'the key at https://developer.download.nvidia.com/compute/cuda/repos/ubuntu1804/x86_64/3bf863cc.pub is not EB693B3035CD5710E231E123A4B469963BF863CC' >&2; exit 1; fi && \
    echo "deb [signed-by=/usr/share/keyrings/cuda-archive-3bf863cc.gpg] https://developer.download.nvidia.com/compute/cuda/repos/ubuntu1804/x86_64 /" > /etc/apt/sources.list.d/cuda.list && \
    rm /var/tmp/3bf863cc.pub

# apt repository machine-learning: key 7FA2AF80 checked against its pinned fingerprint, signed-by its own keyring
RUN curl -fsSL -o /var/tmp/7fa2af80.pub https://developer.download.nvidia.com/compute/machine-learning/repos/ubuntu1804/x86_64/7fa2af80.pub && \
    mkdir -p /usr/share/keyrings && \
    gpg --batch --dearmor < /var/tmp/7fa2af80.pub > /usr/share/keyrings/nvidia-ml-7fa2af80.gpg && \
    if [ "$(gpg --batch --no-default-keyring --keyring /usr/share/keyrings/nvidia-ml-7fa2af80.gpg --with-colons --fingerprint | awk -F: '$1 == "fpr" {print $10; exit}')" != AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80 ]; then echo 'the key at https://developer.download.nvidia.com/compute/machine-learning/repos/ubuntu1804/x86_64/7fa2af80.pub is not AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80' >&2; exit 1; fi && \
    echo "deb [signed-by=/usr/share/keyrings/nvidia-ml-7fa2af80.gpg] https://developer.download.nvidia.com/compute/machine-learning/repos/ubuntu1804/x86_64 /" > /etc/apt/sources.list.d/machine-learning.list && \
    rm /var/tmp/7fa2af80.pub

ENV CUDA_VERSION=10.0.130 \
    LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    LIBRARY_PATH=/usr/local/cuda/lib64/stubs \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    NVIDIA_REQUIRE_CUDA="cuda>=10.0 brand=tesla,driver>=384,driver<385 brand=tesla,driver>=410,driver<411" \
    NVIDIA_VISIBLE_DEVICES=all \
    PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:$PATH

# CUDA 10.0.130 base packages
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        cuda-compat-10-0 \
        cuda-cudart-10-0=10.0.130-1 && \
    rm -rf /var/lib/apt/lists/*
RUN ln -s cuda-10.0 /usr/local/cuda && \
    echo "/usr/local/nvidia/lib" >> /etc/ld.so.conf.d/nvidia.conf && \
    echo "/usr/local/nvidia/lib64" >> /etc/ld.so.conf.d/nvidia.conf

# CUDA 10.0.130 runtime packages
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        cuda-libraries-10-0=10.0.130-1 \
        cuda-nvtx-10-0=10.0.130-1 \
        libnccl2=2.5.6-1+cuda10.0 && \
    rm -rf /var/lib/apt/lists/*

# CUDA 10.0.130 devel packages
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        cuda-command-line-tools-10-0=10.0.130-1 \
        cuda-libraries-dev-10-0=10.0.130-1 \
        cuda-minimal-build-10-0=10.0.130-1 \
        cuda-nvml-dev-10-0=10.0.130-1 \
        libnccl-dev=2.5.6-1+cuda10.0 && \
    rm -rf /var/lib/apt/lists/*

# CUDA 10.0.130 cudnn packages
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libcudnn7-dev=7.6.5.32-1+cuda10.0 \
        libcudnn7=7.6.5.32-1+cuda10.0 && \
    rm -rf /var/lib/apt/lists/*

RUN apt-mark hold libnccl2 libnccl-dev libcudnn7 libcudnn7-dev
