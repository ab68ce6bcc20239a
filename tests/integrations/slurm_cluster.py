"""A real single-node Slurm cluster in a temporary directory: munged, slurmctld and slurmd in the
foreground as child processes, with their own key, ports, state and logs (Debian's Slurm 22.05).
The controller runs the Faultstream event script as jobcomp/script and PrologSlurmctld."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

#: Where slurm.conf runs the event script: at the end of every job (jobcomp/script) and at its
#: start (PrologSlurmctld); or, for a site whose jobcomp plugin is taken, at the end from EpilogSlurmctld.
EVENT_HOOKS = {
    "jobcomp": "JobCompType=jobcomp/script\nJobCompLoc={script}\nPrologSlurmctld={script}",
    "epilog": "JobCompType=jobcomp/none\nEpilogSlurmctld={script}",
}
SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel", "squeue", "sinfo")

SLURM_CONF = """\
ClusterName=faultstream
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/ctld-state
SlurmdSpoolDir={root}/slurmd-spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={ctld_log}
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
{event_hooks}
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
MinJobAge=600
KillWait=2
InactiveLimit=0
OverTimeLimit=0
ReturnToService=2
NodeName={host} CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
"""


def missing_programs() -> list[str]:
    return [name for name in SLURM_PROGRAMS if shutil.which(name) is None]


def node_name() -> str:
    """The host name, as Slurm and rsyslog see it; "localhost" if the name does not resolve
    (slurmctld must reach slurmd by it; slurmd is told its name with -N)."""
    try:
        socket.gethostbyname(socket.gethostname())
    except OSError:
        return "localhost"
    return socket.gethostname()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SlurmCluster:
    """One controller and one compute node, both this machine, named by its hostname."""

    def __init__(self, root: Path, event_script: Path, hooks: str = "jobcomp") -> None:
        self.root = root
        self.host = node_name()
        self.ctld_log = root / "slurmctld.log"
        self.jobs_dir = root / "job-output"
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.socket"
        self.event_script = event_script
        self.event_hooks = EVENT_HOOKS[hooks].format(script=event_script)
        self.processes: list[subprocess.Popen] = []

    def start(self) -> None:
        for directory in ("munge", "ctld-state", "slurmd-spool", "job-output"):
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        self._start_munge()
        ports = {"ctld_port": free_port(), "slurmd_port": free_port()}
        paths = {"root": self.root, "ctld_log": self.ctld_log, "event_hooks": self.event_hooks,
                 "munge_socket": self.munge_socket}  # fmt: skip
        self.conf.write_text(SLURM_CONF.format(host=self.host, **paths, **ports))
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-N", self.host, "-f", str(self.conf)])
        self.wait_until(lambda: self.node_state().startswith("IDLE"), 60, "the node to come up idle")

    def _start_munge(self) -> None:
        munge = self.root / "munge"
        munge.chmod(0o700)  # munged refuses a key or socket directory others can write to
        key = munge / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        self._spawn("munged", [
            "munged", "--foreground", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
            f"--log-file={munge / 'munged.log'}", f"--pid-file={munge / 'munged.pid'}",
            f"--seed-file={munge / 'munged.seed'}",
        ])  # fmt: skip
        self.wait_until(self.munge_socket.exists, 20, "munged's socket")

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = (self.root / f"{name}.out").open("ab")
        self.processes.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def sbatch(self, *options: str, wrap: str) -> str:
        """Submit a batch job whose output goes to job-output/<job id>.out; returns its id."""
        output = str(self.jobs_dir / "%j.out")
        return self.run("sbatch", "--parsable", f"--output={output}", *options, f"--wrap={wrap}")

    def job_state(self, job_id: str) -> str:
        shown = self.run("scontrol", "show", "job", "-o", job_id)
        return re.search(r"JobState=(\S+)", shown).group(1)

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-n", self.host, "-o", "%T").upper()

    def node_reason(self) -> str:
        """``scontrol show node``, whose ``Reason=`` line says why a node is drained."""
        return self.run("scontrol", "show", "node", self.host)

    def wait_for_state(self, job_id: str, *states: str, timeout_s: float = 60) -> None:
        self.wait_until(lambda: self.job_state(job_id) in states, timeout_s, f"job {job_id} to be {states}")

    def wait_until(self, condition, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except RuntimeError:
                pass  # the controller is not answering yet
            time.sleep(0.3)
        raise TimeoutError(f"waited {timeout_s} s for {what}\n{self.logs()}")

    def wait_until_value(self, produce, timeout_s: float):
        """The first truthy value ``produce`` returns within the time."""
        found = []
        self.wait_until(lambda: bool(found.append(produce()) or found[-1]), timeout_s, "a value")
        return found[-1]

    def logs(self) -> str:
        return "\n".join(
            f"== {path.name}\n{path.read_text(errors='replace')[-2000:]}"
            for path in (self.ctld_log, self.root / "slurmd.log", self.root / "munge" / "munged.log")
            if path.exists()
        )

    def stop(self) -> None:
        """Cancel what still runs (so no slurmstepd outlives its slurmd), then stop the daemons."""
        try:
            self.run("scancel", "--partition=debug")
            self.wait_until(lambda: not self.run("squeue", "-h", "-o", "%i"), 20, "the queue to drain")
        except (RuntimeError, TimeoutError, OSError):
            pass
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
