#!/usr/bin/env bash
# A campaign on a real Slurm cluster, as a user would run one (harness/CAMPAIGNS.md, "On a
# cluster"): Debian's slurm-wlm and munge as a single-node cluster on this machine (munged as
# the munge user, then slurmctld and slurmd as root with proctrack/linuxproc and task/none),
# the bundle `vac campaign deploy` renders, its array and its merge step submitted from the
# bundle's directory; every job must end COMPLETED, the merged campaign must verify, and its
# grid must equal the same campaign run locally. The daemons are stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
vac=$(realpath "${VAC:-${CARGO_TARGET_DIR:-target}/debug/vac}")
export PATH="$(dirname "$vac"):$PATH"

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm: installing Debian's slurm-wlm and munge" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >&2 \
    || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >&2; }
fi

work=$(mktemp -d /tmp/vac-slurm.XXXXXX)
chmod 755 "$work"
conf=$work/slurm.conf
host=$(hostname -s)
export SLURM_CONF=$conf
stop() {
  timeout 20 scontrol shutdown >/dev/null 2>&1 || true
  [ -f "$work/munge/munged.pid" ] && kill "$(cat "$work/munge/munged.pid")" 2>/dev/null || true
}
trap stop EXIT

# munge: a key of its own for this run, the daemon as the munge user.
mkdir -p "$work/munge" /run/munge
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$work/munge" /run/munge
chmod 711 "$work/munge"; chmod 400 "$work/munge/munge.key"
runuser -u munge -- munged --key-file="$work/munge/munge.key" \
  --socket="$work/munge/munge.socket" --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/munge.seed"

mkdir -p "$work/spool/ctld" "$work/spool/d"
cat >"$conf" <<CONF
ClusterName=vacci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$work/jobcomp.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
MpiDefault=none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=vacci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$conf"
slurmd -f "$conf"
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo

# The campaign: the three fixtures (and the honest twin again, so that each of the two shards
# has a target), one graded against a contract file beside the campaign, which the bundle
# must carry.
mkdir -p "$work/src/contracts"
vac contract derive --out "$work/src/contracts/honest.toml" -- "$vac" fixture --mode honest
cat >"$work/src/campaign.toml" <<TOML
name = "slurm-ci"
seed = 7
repetitions = 1
[[target]]
id = "honest"
command = ["vac", "fixture", "--mode", "honest"]
contract = "contracts/honest.toml"
[[target]]
id = "dishonest"
command = ["vac", "fixture", "--mode", "dishonest"]
[[target]]
id = "broad"
command = ["vac", "fixture", "--mode", "broad"]
[[target]]
id = "twin-honest"
command = ["vac", "fixture", "--mode", "honest"]
TOML
vac campaign deploy "$work/src/campaign.toml" --shards 2 --to "$work/bundle"

cd "$work/bundle"
array=$(sbatch --parsable campaign.sbatch)
merge=$(sbatch --parsable --dependency=afterok:"$array" merge.sbatch)
echo "slurm: submitted the shards as array job $array, the merge as job $merge (afterok)"
for _ in $(seq 1200); do
  [ -z "$(squeue -h -j "$array,$merge" 2>/dev/null)" ] && break
  sleep 1
done
failed=0
while read -r line; do
  field() { echo "$line" | grep -o "\b$1=[^ ]*" | head -n 1 | cut -d= -f2 || true; }
  task=$(field ArrayTaskId)
  echo "slurm: job $(field JobId) ($(field JobName)${task:+ task $task}): $(field JobState), exit $(field ExitCode)"
  [ "$(field JobState)" = COMPLETED ] || failed=1
done < <(scontrol -o show job)
for out in vac-slurm-ci-*.out; do
  echo "--- $out"; cat "$out"
done
[ $failed = 0 ] || { echo "slurm: a job did not complete" >&2; tail -20 "$work/slurmctld.log" >&2; exit 1; }

vac verify runs/merged
vac campaign run campaign/campaign.toml --out "$work/local" --quiet || [ $? = 1 ]
vac campaign compare "$work/local" runs/merged
echo "slurm: the merged campaign verifies and its grid equals a local run's"
