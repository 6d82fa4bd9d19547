"""The peers of mover_vs_peers.py, each set up where the mover's serve runs
(the receiving namespace with --wan, loopback otherwise): an rsync daemon
(plaintext, no authentication: the peer of the mover without its key), an sshd
for rsync and scp over ssh (encrypted and authenticated: the peer of the
mover with --key-file --encrypt), an iperf3 server and GridFTP."""

import os
import socket
import subprocess
import sys
import time

# Ports of this benchmark's servers on loopback (the range given to the mover's benchmarks).
PORTS = range(53000, 54000)


def free_ports(n, host="127.0.0.1"):
    """n ports of PORTS that nothing listens on here (between namespaces any
    would do: each namespace has its ports to itself)."""
    found = []
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        found.append(port)
        if len(found) == n:
            return found
    sys.exit("no %d free ports in %d-%d" % (n, PORTS[0], PORTS[-1]))


def rsync_daemon(place, work, dst, port):
    """An rsync daemon serving `dst` as module 'dst'; returns the target URL."""
    conf = os.path.join(work, "rsyncd.conf")
    with open(conf, "w") as f:
        f.write("use chroot = no\nuid = root\ngid = root\npid file = %s/rsyncd.pid\n[dst]\npath = %s\nread only = no\n"
                % (work, dst))
    place.start(["rsync", "--daemon", "--no-detach", "--config", conf, "--address", place.host, "--port", str(port)])
    return "rsync://%s:%d/dst/" % (place.host, port)


def sshd(place, work):
    """An sshd on the receiving host, a key for root; returns the ssh command."""
    key, host_key = os.path.join(work, "id"), os.path.join(work, "host")
    for k in (key, host_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k], check=True)
    os.makedirs("/run/sshd", exist_ok=True)
    conf = os.path.join(work, "sshd_config")
    with open(conf, "w") as f:
        f.write("ListenAddress %s\nPort 22\nHostKey %s\nAuthorizedKeysFile %s.pub\nPermitRootLogin prohibit-password\n"
                "UsePAM no\nStrictModes no\nPidFile none\nSubsystem sftp /usr/lib/openssh/sftp-server\n"
                % (place.host, host_key, key))
    server = place.start(["/usr/sbin/sshd", "-D", "-e", "-f", conf])
    time.sleep(0.5)
    if server.poll() is not None:
        sys.exit("sshd did not start (make bench installs it): " + server.stderr.read().strip())
    # The fastest cipher here (AES-NI), as a user moving data would choose it.
    return ("ssh -F none -i %s -c aes128-gcm@openssh.com -o BatchMode=yes -o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % key)


def gridftp(place, dst, port):
    place.start(["/usr/sbin/globus-gridftp-server", "-aa", "-anonymous-user", "nobody", "-p", str(port),
                 "-control-interface", place.host, "-data-interface", place.host, "-log-level", "error"])
    return lambda name: "ftp://%s:%d%s/%s/" % (place.host, port, dst, name)
