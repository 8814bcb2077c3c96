# Rendered by repro from a stack manifest (image hash e5074543190f); edit the stack, not this file.
# Building blocks, slow and stable first: base, os packages, site, mpi, python, tensorflow, horovod, pip packages, sshd, workloads.

# -- base: debian:12
FROM debian:12
LABEL org.repro.image-hash="e5074543190f"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
ENV LANG=C.UTF-8 LC_ALL=C.UTF-8

# -- os packages: every block's distribution packages in one layer
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates \
      cmake \
      g++ \
      iproute2 \
      libopenmpi-dev \
      make \
      openmpi-bin \
      openssh-client \
      openssh-server \
      procps \
      python3 \
      python3-dev \
      python3-venv \
 && rm -rf /var/lib/apt/lists/*

# -- site: build-time settings only (ARG, not ENV: the image itself carries none of them)
ARG PIP_NO_CACHE_DIR=1
ARG PIP_DISABLE_PIP_VERSION_CHECK=1

# -- mpi: Open MPI 4.1.4 is the distribution's own (openmpi-bin, libopenmpi-dev, in os packages)

# -- python: 3.11 (debian 12) in a virtual environment on PATH
RUN python3 -m venv /opt/repro/venv \
 && /opt/repro/venv/bin/python -m pip install --upgrade pip==24.0 setuptools==69.5.1 wheel==0.43.0
ENV VIRTUAL_ENV=/opt/repro/venv PATH=/opt/repro/venv/bin:$PATH PYTHONPATH=/opt/repro

# -- tensorflow: tensorflow-cpu 2.15.1
RUN python -m pip install "tensorflow-cpu==2.15.1"

# -- horovod: 0.28.1, built from source
RUN HOROVOD_WITH_TENSORFLOW=1 \
    HOROVOD_WITHOUT_PYTORCH=1 \
    HOROVOD_WITHOUT_MXNET=1 \
    HOROVOD_WITH_MPI=1 \
    HOROVOD_WITH_GLOO=1 \
    python -m pip install --no-build-isolation "horovod==0.28.1" \
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
