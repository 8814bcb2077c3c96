# Rendered by repro from a stack manifest (image hash 74b706ca7856); edit the stack, not this file.
# Building blocks, slow and stable first: base, preamble, site, os packages, ofed, mpi, nccl, python, python env, tensorflow, horovod, tf_cnn_benchmarks, sshd, workloads.

FROM repro/cuda-base:10.0-cudnn7-devel-ubuntu18.04-7f1ef0ca3718

LABEL org.repro.image-hash=74b706ca7856
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV LANG=C.UTF-8 \
    LC_ALL=C.UTF-8

# site: build-time settings only (ARG, not ENV: the image itself carries none of them)
ARG PIP_NO_CACHE_DIR=1
ARG PIP_DISABLE_PIP_VERSION_CHECK=1

# os packages: what repro's own blocks need, then the stack's own
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates \
        g++ \
        iproute2 \
        make \
        openssh-client \
        openssh-server \
        procps \
        python-pip \
        wget && \
    rm -rf /var/lib/apt/lists/*

# Mellanox OFED version 4.7-3.2.9.0
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates \
        gnupg \
        wget && \
    rm -rf /var/lib/apt/lists/*
RUN wget -qO - https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox | apt-key add - && \
    mkdir -p /etc/apt/sources.list.d && wget -q -nc -P /etc/apt/sources.list.d https://linux.mellanox.com/public/repo/mlnx_ofed/4.7-3.2.9.0/ubuntu18.04/mellanox_mlnx_ofed.list && \
    apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ibverbs-utils \
        libibmad \
        libibmad-devel \
        libibumad \
        libibumad-devel \
        libibverbs-dev \
        libibverbs1 \
        libmlx4-1 \
        libmlx4-dev \
        libmlx5-1 \
        libmlx5-dev \
        librdmacm-dev \
        librdmacm1 && \
    rm -rf /var/lib/apt/lists/*

# OpenMPI version 4.0.0
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        bzip2 \
        file \
        hwloc \
        libnuma-dev \
        make \
        openssh-client \
        perl \
        tar \
        wget && \
    rm -rf /var/lib/apt/lists/*
RUN mkdir -p /var/tmp && wget -q -nc -P /var/tmp https://www.open-mpi.org/software/ompi/v4.0/downloads/openmpi-4.0.0.tar.bz2 && \
    mkdir -p /var/tmp && tar -x -f /var/tmp/openmpi-4.0.0.tar.bz2 -C /var/tmp -j && \
    cd /var/tmp/openmpi-4.0.0 &&   ./configure --prefix=/usr/local --disable-getpwuid --enable-orterun-prefix-by-default --with-cuda --with-verbs && \
    make -j$(nproc) && \
    make -j$(nproc) install && \
    echo "/usr/local/lib" >> /etc/ld.so.conf.d/hpccm.conf && ldconfig && \
    rm -rf /var/tmp/openmpi-4.0.0 /var/tmp/openmpi-4.0.0.tar.bz2
ENV PATH=/usr/local/bin:$PATH

# NCCL 2.5.6-1+cuda10.0, replacing and holding the base image's
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --allow-downgrades --allow-change-held-packages libnccl2=2.5.6-1+cuda10.0 libnccl-dev=2.5.6-1+cuda10.0 && \
    apt-mark hold libnccl2 libnccl-dev && \
    rm -rf /var/lib/apt/lists/*

# Python
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python \
        python-dev && \
    rm -rf /var/lib/apt/lists/*

# pip upgraded to the last release that supports this Python
# pip
RUN python -m pip --no-cache-dir install pip==20.3.4 setuptools==44.1.1 wheel==0.37.1 --upgrade
ENV PYTHONPATH=/opt/repro

# TensorFlow tensorflow-gpu 1.14.0
# pip
RUN python -m pip --no-cache-dir install tensorflow-gpu==1.14.0

# Horovod 0.19.0, built from source
RUN ldconfig /usr/local/cuda/lib64/stubs && \
    HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_GLOO=1 HOROVOD_GPU_ALLREDUCE=NCCL HOROVOD_GPU_BROADCAST=NCCL python -m pip --no-cache-dir install --no-build-isolation horovod==0.19.0 && \
    ldconfig && \
    mkdir -p /opt/repro && \
    horovodrun --check-build > /opt/repro/horovod-check-build.txt && \
    cat /opt/repro/horovod-check-build.txt

# tf_cnn_benchmarks: tensorflow/benchmarks branch cnn_tf_v1.14_compatible at aef6daa90a46
RUN wget -q -O /opt/tf_benchmarks.tar.gz https://github.com/tensorflow/benchmarks/archive/aef6daa90a467a1fc7ce8395cd0067e5fda1ecff.tar.gz && \
    mkdir -p /opt/tf_benchmarks && \
    tar -xzf /opt/tf_benchmarks.tar.gz --strip-components=1 -C /opt/tf_benchmarks && \
    rm /opt/tf_benchmarks.tar.gz && \
    test -f /opt/tf_benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
LABEL org.repro.tf-benchmarks.commit=aef6daa90a467a1fc7ce8395cd0067e5fda1ecff
ENV REPRO_TF_CNN_BENCHMARKS=/opt/tf_benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py

# sshd on port 50000: key-only root login, host keys made once for this image
RUN mkdir -p /run/sshd /root/.ssh && \
    chmod 700 /root/.ssh && \
    rm -f /etc/ssh/ssh_host_* && \
    ssh-keygen -A && \
    echo 'Port 50000' > /etc/ssh/sshd_config && \
    echo 'PermitRootLogin prohibit-password' >> /etc/ssh/sshd_config && \
    echo 'PasswordAuthentication no' >> /etc/ssh/sshd_config && \
    echo 'ChallengeResponseAuthentication no' >> /etc/ssh/sshd_config && \
    echo 'PubkeyAuthentication yes' >> /etc/ssh/sshd_config && \
    echo 'UsePAM yes' >> /etc/ssh/sshd_config && \
    echo 'X11Forwarding no' >> /etc/ssh/sshd_config && \
    echo 'PrintMotd no' >> /etc/ssh/sshd_config && \
    echo 'AcceptEnv LANG LC_*' >> /etc/ssh/sshd_config && \
    echo 'Subsystem sftp /usr/lib/openssh/sftp-server' >> /etc/ssh/sshd_config && \
    sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' /etc/pam.d/sshd && \
    env | grep -E '^(PATH|LD_LIBRARY_PATH|PYTHONPATH|VIRTUAL_ENV)=' > /etc/environment
EXPOSE 50000
CMD ["/usr/sbin/sshd", "-D", "-e"]

# workloads: repro's benchmark programs, last because they change most often
COPY repro/ /opt/repro/repro/
