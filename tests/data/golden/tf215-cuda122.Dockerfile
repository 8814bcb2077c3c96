# Rendered by repro from a stack manifest (image hash c171e8aca4d4); edit the stack, not this file.
# Building blocks, slow and stable first: base, preamble, site, os packages, ofed, mpi, nccl, python, python env, tensorflow, horovod, pip packages, sshd, workloads.

FROM nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04

LABEL org.repro.image-hash=c171e8aca4d4
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
        cmake \
        g++ \
        iproute2 \
        make \
        openssh-client \
        openssh-server \
        procps \
        python3-venv && \
    rm -rf /var/lib/apt/lists/*

# Mellanox OFED version 5.8-3.0.7.0
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates \
        gnupg \
        wget && \
    rm -rf /var/lib/apt/lists/*
RUN wget -qO - https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox | apt-key add - && \
    mkdir -p /etc/apt/sources.list.d && wget -q -nc -P /etc/apt/sources.list.d https://linux.mellanox.com/public/repo/mlnx_ofed/5.8-3.0.7.0/ubuntu22.04/mellanox_mlnx_ofed.list && \
    apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ibverbs-providers \
        ibverbs-utils \
        libibmad-dev \
        libibmad5 \
        libibumad-dev \
        libibumad3 \
        libibverbs-dev \
        libibverbs1 \
        librdmacm-dev \
        librdmacm1 && \
    rm -rf /var/lib/apt/lists/*

# OpenMPI version 4.1.6
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
RUN mkdir -p /var/tmp && wget -q -nc -P /var/tmp https://www.open-mpi.org/software/ompi/v4.1/downloads/openmpi-4.1.6.tar.bz2 && \
    mkdir -p /var/tmp && tar -x -f /var/tmp/openmpi-4.1.6.tar.bz2 -C /var/tmp -j && \
    cd /var/tmp/openmpi-4.1.6 &&   ./configure --prefix=/usr/local --disable-getpwuid --enable-orterun-prefix-by-default --with-cuda --with-verbs && \
    make -j$(nproc) && \
    make -j$(nproc) install && \
    echo "/usr/local/lib" >> /etc/ld.so.conf.d/hpccm.conf && ldconfig && \
    rm -rf /var/tmp/openmpi-4.1.6 /var/tmp/openmpi-4.1.6.tar.bz2
ENV PATH=/usr/local/bin:$PATH

# NCCL 2.19.3-1+cuda12.2, replacing and holding the base image's
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --allow-downgrades --allow-change-held-packages libnccl2=2.19.3-1+cuda12.2 libnccl-dev=2.19.3-1+cuda12.2 && \
    apt-mark hold libnccl2 libnccl-dev && \
    rm -rf /var/lib/apt/lists/*

# Python
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 \
        python3-dev && \
    rm -rf /var/lib/apt/lists/*

# Python virtual environment /opt/repro/venv on PATH
RUN python3 -m venv /opt/repro/venv
# pip
RUN /opt/repro/venv/bin/python -m pip --no-cache-dir install pip==24.0 setuptools==69.5.1 wheel==0.43.0 --upgrade
ENV PATH=/opt/repro/venv/bin:$PATH \
    PYTHONPATH=/opt/repro \
    VIRTUAL_ENV=/opt/repro/venv

# TensorFlow tensorflow 2.15.1
# pip
RUN python -m pip --no-cache-dir install tensorflow==2.15.1

# Horovod 0.28.1, built from source
RUN ldconfig /usr/local/cuda/lib64/stubs && \
    HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_MPI=1 HOROVOD_WITH_GLOO=1 HOROVOD_GPU_OPERATIONS=NCCL python -m pip --no-cache-dir install --no-build-isolation horovod==0.28.1 && \
    ldconfig && \
    mkdir -p /opt/repro && \
    horovodrun --check-build > /opt/repro/horovod-check-build.txt && \
    cat /opt/repro/horovod-check-build.txt

# pip packages: what the workloads import, then the stack's own
# pip
RUN python -m pip --no-cache-dir install scikit-learn==1.3.2

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
