# Rendered by repro from a stack manifest (image hash 8c4a20217230); edit the stack, not this file.
# Building blocks, slow and stable first: base, os packages, site, ofed, mpi, nccl, cudnn, python, tensorflow, horovod, tf_cnn_benchmarks, sshd, workloads.

# -- base: nvidia/cuda:9.1-cudnn7-devel-ubuntu16.04
FROM nvidia/cuda:9.1-cudnn7-devel-ubuntu16.04
LABEL org.repro.image-hash="8c4a20217230"
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

# -- ofed: Mellanox OFED 4.3-1 user space for ubuntu16.04 (the hosts carry the kernel part)
ARG MOFED_URL=https://content.mellanox.com/ofed/MLNX_OFED-4.3-1/MLNX_OFED_LINUX-4.3-1-ubuntu16.04-x86_64.tgz
RUN mkdir -p /tmp/mofed && cd /tmp/mofed \
 && curl -fsSL "$MOFED_URL" -o mofed.tgz \
 && tar -xzf mofed.tgz --strip-components=1 \
 && ./mlnxofedinstall --user-space-only --without-fw-update --all --force -q \
 && cd / && rm -rf /tmp/mofed /var/lib/apt/lists/*

# -- mpi: Open MPI 3.0.1 built from source (CUDA-aware)
ARG OPENMPI_URL=https://download.open-mpi.org/release/open-mpi/v3.0/openmpi-3.0.1.tar.bz2
RUN mkdir -p /tmp/openmpi && cd /tmp/openmpi \
 && curl -fsSL "$OPENMPI_URL" | tar -xj --strip-components=1 \
 && ./configure --prefix=/usr/local --enable-orterun-prefix-by-default --disable-getpwuid --with-cuda=/usr/local/cuda --with-verbs \
 && make -j"$(nproc)" install \
 && ldconfig && cd / && rm -rf /tmp/openmpi

# -- nccl: 2.2.15-1+cuda9.1 (the base image holds these packages; replace and hold them)
RUN apt-get update \
 && apt-get install -y --no-install-recommends --allow-downgrades --allow-change-held-packages \
      libnccl2=2.2.15-1+cuda9.1 libnccl-dev=2.2.15-1+cuda9.1 \
 && apt-mark hold libnccl2 libnccl-dev \
 && rm -rf /var/lib/apt/lists/*

# -- cudnn: 7.1.3.16-1+cuda9.1 (the base image ships 7.1.2.21)
RUN apt-get update \
 && apt-get install -y --no-install-recommends --allow-downgrades --allow-change-held-packages \
      libcudnn7=7.1.3.16-1+cuda9.1 libcudnn7-dev=7.1.3.16-1+cuda9.1 \
 && apt-mark hold libcudnn7 libcudnn7-dev \
 && rm -rf /var/lib/apt/lists/*

# -- python: 2.7 (ubuntu 16.04); pip upgraded to the last release that supports it
RUN python -m pip install --upgrade pip==20.3.4 setuptools==44.1.1 wheel==0.37.1
ENV PYTHONPATH=/opt/repro

# -- tensorflow: tensorflow-gpu 1.10.0, a source build taken from the wheelhouse (no index)
COPY wheelhouse/ /tmp/wheelhouse/
RUN python -m pip install --no-index --find-links /tmp/wheelhouse "tensorflow-gpu==1.10.0"

# -- horovod: 0.15.2, built from source
RUN ldconfig /usr/local/cuda/lib64/stubs \
 && HOROVOD_WITH_TENSORFLOW=1 \
    HOROVOD_WITHOUT_PYTORCH=1 \
    HOROVOD_WITHOUT_MXNET=1 \
    HOROVOD_GPU_ALLREDUCE=NCCL \
    HOROVOD_GPU_BROADCAST=NCCL \
    python -m pip install --no-build-isolation "horovod==0.15.2" \
 && ldconfig

# -- tf_cnn_benchmarks: tensorflow/benchmarks branch cnn_tf_v1.10_compatible at 4c7b09ad87bb
ARG TF_BENCHMARKS_URL=https://github.com/tensorflow/benchmarks/archive/4c7b09ad87bbfc4b1f89650bcee40b3fc5e7dfed.tar.gz
RUN mkdir -p /opt/tf_benchmarks \
 && curl -fsSL "$TF_BENCHMARKS_URL" | tar -xz --strip-components=1 -C /opt/tf_benchmarks \
 && test -f /opt/tf_benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
LABEL org.repro.tf-benchmarks.commit="4c7b09ad87bbfc4b1f89650bcee40b3fc5e7dfed"
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
