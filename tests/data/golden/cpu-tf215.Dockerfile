# Rendered by repro from a stack manifest (image hash e5074543190f); edit the stack, not this file.
# Building blocks, slow and stable first: base, preamble, site, os packages, mpi, python, python env, tensorflow, horovod, pip packages, sshd, workloads.

FROM debian:12

LABEL org.repro.image-hash=e5074543190f
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
        libopenmpi-dev \
        make \
        openmpi-bin \
        openssh-client \
        openssh-server \
        procps \
        python3-venv && \
    rm -rf /var/lib/apt/lists/*

# Open MPI 4.1.4 is the distribution's own (openmpi-bin, in the os packages)

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

# TensorFlow tensorflow-cpu 2.15.1
# pip
RUN python -m pip --no-cache-dir install tensorflow-cpu==2.15.1

# Horovod 0.28.1, built from source
RUN HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITH_MPI=1 HOROVOD_WITH_GLOO=1 python -m pip --no-cache-dir install --no-build-isolation horovod==0.28.1 && \
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
