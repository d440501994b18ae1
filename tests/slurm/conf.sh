# Sourced by run.sh and health.sh: prints the slurm.conf lines both clusters share (one node
# `pp` on 127.0.0.1, no authentication, state and logs under $W, daemons as root). The caller
# appends its own lines (GRES, health check) and the node and partition lines.
# Needs: W (work dir), H (hostname), CPORT, DPORT.
base_conf() {
  cat <<CONF
ClusterName=peerpath
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$CPORT
SlurmdPort=$DPORT
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
CONF
}
