# Rendered by repro from a stack manifest (image hash df93e8182204); edit the stack, not this file.
# Building blocks, slow and stable first: base, preamble, site, os packages, mpi, python, python env, pytorch, pip packages, sshd, workloads.

FROM nvidia/cuda:12.4.1-devel-ubuntu22.04

LABEL org.repro.image-hash=df93e8182204
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
        iproute2 \
        openssh-client \
        openssh-server \
        procps \
        python3-venv && \
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
    cd /var/tmp/openmpi-4.1.6 &&   ./configure --prefix=/usr/local --disable-getpwuid --enable-orterun-prefix-by-default --with-cuda --without-verbs && \
    make -j$(nproc) && \
    make -j$(nproc) install && \
    echo "/usr/local/lib" >> /etc/ld.so.conf.d/hpccm.conf && ldconfig && \
    rm -rf /var/tmp/openmpi-4.1.6 /var/tmp/openmpi-4.1.6.tar.bz2
ENV PATH=/usr/local/bin:$PATH

# Python
RUN apt-get update -y && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 && \
    rm -rf /var/lib/apt/lists/*

# Python virtual environment /opt/repro/venv on PATH
RUN python3 -m venv /opt/repro/venv
# pip
RUN /opt/repro/venv/bin/python -m pip --no-cache-dir install pip==24.0 setuptools==69.5.1 wheel==0.43.0 --upgrade
ENV PATH=/opt/repro/venv/bin:$PATH \
    PYTHONPATH=/opt/repro \
    VIRTUAL_ENV=/opt/repro/venv

# PyTorch torch 2.4.1 (cu124) from https://download.pytorch.org/whl/cu124
# pip
RUN python -m pip --no-cache-dir install torch==2.4.1+cu124 --extra-index-url https://download.pytorch.org/whl/cu124

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
