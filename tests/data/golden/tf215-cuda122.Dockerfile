# Rendered by repro from a stack manifest (image hash c171e8aca4d4); edit the stack, not this file.
# Building blocks, slow and stable first: base, os packages, site, ofed, mpi, nccl, python, tensorflow, horovod, pip packages, sshd, workloads.

# -- base: nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04
FROM nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04
LABEL org.repro.image-hash="c171e8aca4d4"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
ENV LANG=C.UTF-8 LC_ALL=C.UTF-8

# -- os packages: every block's distribution packages in one layer
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      bzip2 \
      ca-certificates \
      cmake \
      curl \
      ethtool \
      file \
      g++ \
      iproute2 \
      kmod \
      libelf1 \
      libltdl7 \
      libmnl0 \
      libnl-3-200 \
      libnl-route-3-200 \
      libnuma1 \
      lsb-release \
      make \
      openssh-client \
      openssh-server \
      pciutils \
      perl \
      procps \
      python3 \
      python3-dev \
      python3-venv \
      tcl \
      tk \
      udev \
 && rm -rf /var/lib/apt/lists/*

# -- site: build-time settings only (ARG, not ENV: the image itself carries none of them)
ARG PIP_NO_CACHE_DIR=1
ARG PIP_DISABLE_PIP_VERSION_CHECK=1

# -- ofed: Mellanox OFED 5.8-3.0.7.0 user space for ubuntu22.04 (the hosts carry the kernel part)
ARG MOFED_URL=https://content.mellanox.com/ofed/MLNX_OFED-5.8-3.0.7.0/MLNX_OFED_LINUX-5.8-3.0.7.0-ubuntu22.04-x86_64.tgz
RUN mkdir -p /tmp/mofed && cd /tmp/mofed \
 && curl -fsSL "$MOFED_URL" -o mofed.tgz \
 && tar -xzf mofed.tgz --strip-components=1 \
 && ./mlnxofedinstall --user-space-only --without-fw-update --all --force -q \
 && cd / && rm -rf /tmp/mofed /var/lib/apt/lists/*

# -- mpi: Open MPI 4.1.6 built from source (CUDA-aware)
ARG OPENMPI_URL=https://download.open-mpi.org/release/open-mpi/v4.1/openmpi-4.1.6.tar.bz2
RUN mkdir -p /tmp/openmpi && cd /tmp/openmpi \
 && curl -fsSL "$OPENMPI_URL" | tar -xj --strip-components=1 \
 && ./configure --prefix=/usr/local --enable-orterun-prefix-by-default --disable-getpwuid --with-cuda=/usr/local/cuda --with-verbs \
 && make -j"$(nproc)" install \
 && ldconfig && cd / && rm -rf /tmp/openmpi

# -- nccl: 2.19.3-1+cuda12.2 (the base image holds these packages; replace and hold them)
RUN apt-get update \
 && apt-get install -y --no-install-recommends --allow-downgrades --allow-change-held-packages \
      libnccl2=2.19.3-1+cuda12.2 libnccl-dev=2.19.3-1+cuda12.2 \
 && apt-mark hold libnccl2 libnccl-dev \
 && rm -rf /var/lib/apt/lists/*

# -- python: 3.10 (ubuntu 22.04) in a virtual environment on PATH
RUN python3 -m venv /opt/repro/venv \
 && /opt/repro/venv/bin/python -m pip install --upgrade pip==24.0 setuptools==69.5.1 wheel==0.43.0
ENV VIRTUAL_ENV=/opt/repro/venv PATH=/opt/repro/venv/bin:$PATH PYTHONPATH=/opt/repro

# -- tensorflow: tensorflow 2.15.1
RUN python -m pip install "tensorflow==2.15.1"

# -- horovod: 0.28.1, built from source
RUN ldconfig /usr/local/cuda/lib64/stubs \
 && HOROVOD_WITH_TENSORFLOW=1 \
    HOROVOD_WITHOUT_PYTORCH=1 \
    HOROVOD_WITHOUT_MXNET=1 \
    HOROVOD_WITH_MPI=1 \
    HOROVOD_WITH_GLOO=1 \
    HOROVOD_GPU_OPERATIONS=NCCL \
    python -m pip install --no-build-isolation "horovod==0.28.1" \
 && ldconfig \
 && mkdir -p /opt/repro && horovodrun --check-build | tee /opt/repro/horovod-check-build.txt

# -- pip packages: what the workloads import beyond TensorFlow and Horovod, then the stack's own
RUN python -m pip install "scikit-learn==1.3.2"

# -- sshd: seed 003's launch pattern (`sshd -p 50000`): key-only root login, host keys made once
#    for this image (repro records them in the lock), the image's environment for ssh sessions
RUN mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh \
 && rm -f /etc/ssh/ssh_host_* && ssh-keygen -A \
 && printf '%s\n' \
      'Port 50000' \
      'PermitRootLogin prohibit-password' \
      'PasswordAuthentication no' \
      'ChallengeResponseAuthentication no' \
      'PubkeyAuthentication yes' \
      'UsePAM yes' \
      'X11Forwarding no' \
      'PrintMotd no' \
      'AcceptEnv LANG LC_*' \
      'Subsystem sftp /usr/lib/openssh/sftp-server' \
      > /etc/ssh/sshd_config \
 && sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' /etc/pam.d/sshd \
 && env | grep -E '^(PATH|LD_LIBRARY_PATH|PYTHONPATH|VIRTUAL_ENV)=' > /etc/environment
EXPOSE 50000
CMD ["/usr/sbin/sshd", "-D", "-e"]

# -- workloads: repro's benchmark programs, last because they change most often
COPY repro/ /opt/repro/repro/
