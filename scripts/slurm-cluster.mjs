// A throwaway single-node Slurm cluster on loopback for the tests and the benchmark: its own munge
// key and munged, a generated slurm.conf (own ports, state and spool folders in a temporary
// directory, no accounting database), slurmctld and slurmd in the foreground as children of this
// process. Clients reach it through SLURM_CONF (see `env`). `stop()` cancels what is left, stops the
// daemons and removes the directory. Needs root (SlurmUser=root) and Debian's slurm-wlm and munge
// (scripts/provision-slurm.mjs installs them).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { findProgram } from './provision-slurm.mjs';

/** How long the cluster may take to come up (munged, slurmctld, slurmd registering as idle). */
const START_TIMEOUT_MS = 60_000;
/** How long stopping waits for jobs, then for each daemon, before killing. */
const STOP_WAIT_MS = 10_000;

/** A free TCP port on loopback (closed again before returning; the daemons bind it next). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function program(name) {
  const found = findProgram(name);
  if (!found) throw new Error(`slurm test cluster: ${name} not found; run \`npm run provision\` (installs Debian's slurm-wlm and munge)`);
  return found;
}

/** The node line `slurmd -C` prints for this machine (CPUs, sockets, cores, memory as slurmd sees them). */
function nodeHardware() {
  const res = spawnSync(program('slurmd'), ['-C'], { encoding: 'utf8' });
  const line = (res.stdout ?? '').split('\n').find((l) => l.startsWith('NodeName='));
  if (!line) throw new Error(`slurm test cluster: \`slurmd -C\` printed no node line: ${res.stderr}`);
  // Everything but NodeName (ours is the hostname), RealMemory kept 5 % below what slurmd measures
  // so that a small difference between its two readings never drains the node.
  return line
    .split(/\s+/)
    .filter((f) => f && !f.startsWith('NodeName='))
    .map((f) => (f.startsWith('RealMemory=') ? `RealMemory=${Math.floor(Number(f.slice(11)) * 0.95)}` : f))
    .join(' ');
}

/**
 * Starts a cluster and resolves once its node is idle. `log` receives progress lines.
 * @returns {Promise<{ conf: string, dir: string, env: Record<string,string>, partition: string, stop: () => Promise<void> }>}
 */
/** @param {{ log?: (line: string) => void }} [options] */
export async function startSlurmCluster({ log = (/** @type {string} */ _line) => {} } = {}) {
  if (process.getuid?.() !== 0) throw new Error('slurm test cluster: needs root (SlurmUser=root); or name an existing cluster in PORTICO_TEST_SLURM');
  const dir = mkdtempSync(path.join(tmpdir(), 'portico-slurm-'));
  chmodSync(dir, 0o700); // munged refuses a key or socket folder others may write
  const children = [];
  const started = Date.now();
  let stopped = false;

  const stopNow = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  // Never leave daemons behind when this process ends without calling stop().
  process.once('exit', stopNow);

  const daemon = (name, args) => {
    const out = path.join(dir, `${path.basename(name)}.out`);
    const child = spawn(program(name), args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SLURM_CONF: conf } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    child.on('exit', (code, signal) => {
      if (!stopped) log(`${name} exited (${signal ?? code}): ${stderr.trim()}`);
      writeFileSync(out, stderr);
    });
    children.push(child);
    return child;
  };

  const conf = path.join(dir, 'slurm.conf');
  try {
    const key = path.join(dir, 'munge.key');
    const socket = path.join(dir, 'munge.socket');
    const keyRes = spawnSync(program('mungekey'), ['--create', '--keyfile', key], { encoding: 'utf8' });
    if (keyRes.status !== 0) throw new Error(`slurm test cluster: mungekey failed: ${keyRes.stderr}`);
    chmodSync(key, 0o600);
    daemon('munged', ['--foreground', '--force', `--socket=${socket}`, `--key-file=${key}`, `--pid-file=${path.join(dir, 'munged.pid')}`, `--log-file=${path.join(dir, 'munged.log')}`, `--seed-file=${path.join(dir, 'munged.seed')}`]);

    for (const sub of ['state', 'spool']) mkdirSync(path.join(dir, sub));
    const [ctldPort, slurmdPort] = [await freePort(), await freePort()];
    const host = hostname();
    const partition = 'debug';
    writeFileSync(
      conf,
      [
        `ClusterName=portico${randomBytes(3).toString('hex')}`,
        `SlurmctldHost=${host}(127.0.0.1)`,
        `SlurmctldPort=${ctldPort}`,
        `SlurmdPort=${slurmdPort}`,
        // Bind the daemons to their own address (loopback), never to every interface.
        'CommunicationParameters=NoInAddrAny',
        'SlurmUser=root',
        'SlurmdUser=root',
        'AuthType=auth/munge',
        'CredType=cred/munge',
        `AuthInfo=socket=${socket}`,
        `StateSaveLocation=${path.join(dir, 'state')}`,
        `SlurmdSpoolDir=${path.join(dir, 'spool')}`,
        `SlurmctldPidFile=${path.join(dir, 'slurmctld.pid')}`,
        `SlurmdPidFile=${path.join(dir, 'slurmd.pid')}`,
        `SlurmctldLogFile=${path.join(dir, 'slurmctld.log')}`,
        `SlurmdLogFile=${path.join(dir, 'slurmd.log')}`,
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_CPU',
        'SchedulerType=sched/backfill',
        'ReturnToService=2',
        'MpiDefault=none',
        'SwitchType=switch/none',
        'JobAcctGatherType=jobacct_gather/none',
        'AccountingStorageType=accounting_storage/none',
        'JobCompType=jobcomp/none',
        // Finished jobs stay visible to squeue/scontrol for 5 minutes (the gateway reads them there).
        'MinJobAge=300',
        // A job past its limit gets SIGTERM, then SIGKILL 2 s later; no extra minutes over the limit.
        'KillWait=2',
        'OverTimeLimit=0',
        'InactiveLimit=0',
        'SlurmctldTimeout=30',
        'SlurmdTimeout=60',
        'MessageTimeout=10',
        'SlurmctldDebug=info',
        'SlurmdDebug=info',
        `NodeName=${host} NodeAddr=127.0.0.1 ${nodeHardware()} State=UNKNOWN`,
        `PartitionName=${partition} Nodes=${host} Default=YES MaxTime=INFINITE State=UP`,
        '',
      ].join('\n'),
    );
    const env = { SLURM_CONF: conf };

    // munged first: both Slurm daemons authenticate through it at start.
    while (!existsSync(socket)) {
      if (Date.now() - started > START_TIMEOUT_MS) throw new Error('slurm test cluster: munged did not create its socket');
      if (children[0].exitCode !== null) throw new Error(`slurm test cluster: munged exited: ${readTail(path.join(dir, 'munged.log'))}`);
      await sleep(50);
    }
    daemon('slurmctld', ['-D', '-c', '-i', '-f', conf]);
    daemon('slurmd', ['-D', '-f', conf]);

    // Ready when the node is idle (registered, returned to service) and the controller answers.
    for (;;) {
      const res = spawnSync(program('sinfo'), ['--noheader', '--format=%T', '--nodes', host], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 10_000 });
      const state = (res.stdout ?? '').trim();
      if (res.status === 0 && /^idle/.test(state)) break;
      for (const child of children) {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`slurm test cluster: a daemon exited while starting; slurmctld.log: ${readTail(path.join(dir, 'slurmctld.log'))}\nslurmd.log: ${readTail(path.join(dir, 'slurmd.log'))}`);
        }
      }
      if (Date.now() - started > START_TIMEOUT_MS) {
        throw new Error(`slurm test cluster: node not idle after ${START_TIMEOUT_MS / 1000} s (sinfo: '${state}' ${res.stderr ?? ''}); slurmctld.log: ${readTail(path.join(dir, 'slurmctld.log'))}`);
      }
      await sleep(200);
    }
    log(`slurm test cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s (${conf})`);

    const stop = async () => {
      if (stopped) return;
      // Cancel every job left (a run's processes outlive slurmd otherwise), then wait for the queue to empty.
      spawnSync(program('scancel'), ['--user=root'], { env: { ...process.env, ...env }, timeout: 10_000 });
      const deadline = Date.now() + STOP_WAIT_MS;
      while (Date.now() < deadline) {
        const res = spawnSync(program('squeue'), ['--noheader', '--format=%i'], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 10_000 });
        if (res.status !== 0 || !(res.stdout ?? '').trim()) break;
        await sleep(200);
      }
      stopped = true;
      for (const child of [...children].reverse()) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(STOP_WAIT_MS)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      process.off('exit', stopNow);
      rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 });
    };
    return { conf, dir, env, partition, stop };
  } catch (err) {
    stopped = true;
    stopNow();
    process.off('exit', stopNow);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function readTail(file) {
  try {
    return readFileSync(file, 'utf8').slice(-3000);
  } catch {
    return '(none)';
  }
}

// `node scripts/slurm-cluster.mjs`: start one, print its SLURM_CONF, keep it up until Ctrl+C.
if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const cluster = await startSlurmCluster({ log: console.log });
  console.log(`export SLURM_CONF=${cluster.conf}`);
  // Listening for good: with no listener, a second Ctrl+C during the stop would kill this process
  // with the daemons still up.
  await new Promise((r) => {
    process.on('SIGINT', r);
    process.on('SIGTERM', r);
  });
  await cluster.stop();
}
