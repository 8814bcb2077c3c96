# Rendered by repro from a stack manifest (image hash 74b706ca7856); edit the stack, not this file.
# Building blocks, slow and stable first: base, os packages, site, ofed, mpi, nccl, python, tensorflow, horovod, tf_cnn_benchmarks, sshd, workloads.

# -- base: nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04
FROM nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04
LABEL org.repro.image-hash="74b706ca7856"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
ENV LANG=C.UTF-8 LC_ALL=C.UTF-8

# -- os packages: every block's distribution packages in one layer
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      bzip2 \
      ca-certificates \
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
      python \
      python-dev \
      python-pip \
      tcl \
      tk \
      udev \
 && rm -rf /var/lib/apt/lists/*

# -- site: build-time settings only (ARG, not ENV: the image itself carries none of them)
ARG PIP_NO_CACHE_DIR=1
ARG PIP_DISABLE_PIP_VERSION_CHECK=1

# -- ofed: Mellanox OFED 4.7-3.2.9.0 user space for ubuntu18.04 (the hosts carry the kernel part)
ARG MOFED_URL=https://content.mellanox.com/ofed/MLNX_OFED-4.7-3.2.9.0/MLNX_OFED_LINUX-4.7-3.2.9.0-ubuntu18.04-x86_64.tgz
RUN mkdir -p /tmp/mofed && cd /tmp/mofed \
 && curl -fsSL "$MOFED_URL" -o mofed.tgz \
 && tar -xzf mofed.tgz --strip-components=1 \
 && ./mlnxofedinstall --user-space-only --without-fw-update --all --force -q \
 && cd / && rm -rf /tmp/mofed /var/lib/apt/lists/*

# -- mpi: Open MPI 4.0.0 built from source (CUDA-aware)
ARG OPENMPI_URL=https://download.open-mpi.org/release/open-mpi/v4.0/openmpi-4.0.0.tar.bz2
RUN mkdir -p /tmp/openmpi && cd /tmp/openmpi \
 && curl -fsSL "$OPENMPI_URL" | tar -xj --strip-components=1 \
 && ./configure --prefix=/usr/local --enable-orterun-prefix-by-default --disable-getpwuid --with-cuda=/usr/local/cuda --with-verbs \
 && make -j"$(nproc)" install \
 && ldconfig && cd / && rm -rf /tmp/openmpi

# -- nccl: 2.5.6-1+cuda10.0 (the base image holds these packages; replace and hold them)
RUN apt-get update \
 && apt-get install -y --no-install-recommends --allow-downgrades --allow-change-held-packages \
      libnccl2=2.5.6-1+cuda10.0 libnccl-dev=2.5.6-1+cuda10.0 \
 && apt-mark hold libnccl2 libnccl-dev \
 && rm -rf /var/lib/apt/lists/*

# -- python: 2.7 (ubuntu 18.04); pip upgraded to the last release that supports it
RUN python -m pip install --upgrade pip==20.3.4 setuptools==44.1.1 wheel==0.37.1
ENV PYTHONPATH=/opt/repro

# -- tensorflow: tensorflow-gpu 1.14.0
RUN python -m pip install "tensorflow-gpu==1.14.0"

# -- horovod: 0.19.0, built from source
RUN ldconfig /usr/local/cuda/lib64/stubs \
 && HOROVOD_WITH_TENSORFLOW=1 \
    HOROVOD_WITHOUT_PYTORCH=1 \
    HOROVOD_WITHOUT_MXNET=1 \
    HOROVOD_WITH_MPI=1 \
    HOROVOD_WITHOUT_GLOO=1 \
    HOROVOD_GPU_ALLREDUCE=NCCL \
    HOROVOD_GPU_BROADCAST=NCCL \
    python -m pip install --no-build-isolation "horovod==0.19.0" \
 && ldconfig \
 && mkdir -p /opt/repro && horovodrun --check-build | tee /opt/repro/horovod-check-build.txt

# -- tf_cnn_benchmarks: tensorflow/benchmarks branch cnn_tf_v1.14_compatible at aef6daa90a46
ARG TF_BENCHMARKS_URL=https://github.com/tensorflow/benchmarks/archive/aef6daa90a467a1fc7ce8395cd0067e5fda1ecff.tar.gz
RUN mkdir -p /opt/tf_benchmarks \
 && curl -fsSL "$TF_BENCHMARKS_URL" | tar -xz --strip-components=1 -C /opt/tf_benchmarks \
 && test -f /opt/tf_benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
LABEL org.repro.tf-benchmarks.commit="aef6daa90a467a1fc7ce8395cd0067e5fda1ecff"
ENV REPRO_TF_CNN_BENCHMARKS=/opt/tf_benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py

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
