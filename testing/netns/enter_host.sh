#!/bin/sh
# Open MPI's remote shell agent for the namespace testbed's render hosts
# (mpirun --mca plm_rsh_agent enter_host.sh): `enter_host.sh HOST WORDS...`
# runs WORDS on that host as ssh would (joined, read by sh), inside the
# namespaces of its holder process: its network, its /dev/shm, its hostname.
# SLABCAST_NETNS_HOSTS maps names to holders: "render0=PID render1=PID".
host=$1
shift
for entry in $SLABCAST_NETNS_HOSTS; do
    case $entry in
        "$host="*) exec nsenter -t "${entry#*=}" -m -n -u -- sh -c "$*" ;;
    esac
done
echo "enter_host.sh: no host '$host' in SLABCAST_NETNS_HOSTS ($SLABCAST_NETNS_HOSTS)" >&2
exit 255
