// Fidelity of the emulator's Compute Engine disks and of attaching them to TPU nodes,
// checked by Google's own googleapis client: compute('v1') makes, reads, lists and
// deletes a disk, tpu('v2') attaches it through a patch of data_disks (what gcloud's
// attach-disk sends). Started by run.sh beside fidelity.test.js, against the same
// server, in a project of its own. Where the client disagrees with the emulator, the
// emulator is wrong.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const {google} = require('googleapis');

const endpoint = process.env.TPUFLEET_EMULATOR_ENDPOINT;
assert.ok(endpoint, 'TPUFLEET_EMULATOR_ENDPOINT=host:port must be set (run.sh sets it)');
const base = `http://${endpoint}`;
const token = fs.readFileSync(process.env.TPUFLEET_EMULATOR_TOKEN_FILE, 'utf8').trim();
const PROJECT = 'fidelity-disks';
const ZONE = 'us-central2-b';
const PARENT = `projects/${PROJECT}/locations/${ZONE}`;
const headers = {authorization: `Bearer ${token}`};

const compute = google.compute({version: 'v1', rootUrl: `${base}/`, headers});
const tpu = google.tpu({version: 'v2', rootUrl: `${base}/`, headers});

// Waits for a Compute zone operation with operations.wait.
async function computeDone(op) {
  let now = op;
  for (let i = 0; i < 20 && now.status !== 'DONE'; i++) {
    now = (await compute.zoneOperations.wait({project: PROJECT, zone: ZONE, operation: op.name})).data;
  }
  assert.equal(now.status, 'DONE');
  assert.equal(now.error, undefined, JSON.stringify(now.error));
  return now;
}

// Polls a TPU operation until done.
async function tpuDone(op) {
  let now = op;
  for (let i = 0; i < 100 && !now.done; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    now = (await tpu.projects.locations.operations.get({name: op.name})).data;
  }
  assert.ok(now.done, 'the operation ends');
  assert.equal(now.error, undefined, JSON.stringify(now.error));
  return now;
}

test('googleapis compute(v1) disks and tpu(v2) data_disks', async (t) => {
  await t.test('disks.insert, get, list', async () => {
    const res = await compute.disks.insert({project: PROJECT, zone: ZONE,
                                            requestBody: {name: 'shared', sizeGb: '10', type: 'pd-balanced',
                                                          labels: {team: 'vision'}}});
    assert.equal(res.data.kind, 'compute#operation');
    assert.equal(res.data.operationType, 'insert');
    await computeDone(res.data);
    const disk = (await compute.disks.get({project: PROJECT, zone: ZONE, disk: 'shared'})).data;
    assert.equal(disk.kind, 'compute#disk');
    assert.equal(disk.status, 'READY');
    assert.equal(disk.sizeGb, '10');
    assert.match(disk.type, /\/zones\/us-central2-b\/diskTypes\/pd-balanced$/);
    assert.match(disk.id, /^[0-9]{19}$/);
    assert.deepEqual(disk.labels, {team: 'vision'});
    const list = (await compute.disks.list({project: PROJECT, zone: ZONE, maxResults: 1})).data;
    assert.deepEqual(list.items.map((d) => d.name), ['shared']);
    const types = (await compute.diskTypes.list({project: PROJECT, zone: ZONE})).data;
    assert.ok(types.items.some((d) => d.name === 'pd-balanced'));
  });

  await t.test('errors come in Compute\'s envelope', async () => {
    await assert.rejects(compute.disks.insert({project: PROJECT, zone: ZONE, requestBody: {name: 'shared'}}),
                         (e) => e.code === 409 && e.response.data.error.errors[0].reason === 'alreadyExists');
    await assert.rejects(compute.disks.get({project: PROJECT, zone: ZONE, disk: 'nope'}),
                         (e) => e.code === 404 && e.response.data.error.errors[0].reason === 'notFound');
  });

  await t.test('a patch of data_disks attaches READ_ONLY and the disk names the worker', async () => {
    const created = await tpu.projects.locations.nodes.create({
      parent: PARENT, nodeId: 'reader', requestBody: {acceleratorType: 'v4-8', runtimeVersion: 'tpu-ubuntu2204-base'}});
    await tpuDone(created.data);
    const patch = await tpu.projects.locations.nodes.patch({
      name: `${PARENT}/nodes/reader`, updateMask: 'data_disks',
      requestBody: {dataDisks: [{sourceDisk: `projects/${PROJECT}/zones/${ZONE}/disks/shared`, mode: 'READ_ONLY'}]}});
    const done = await tpuDone(patch.data);
    assert.equal(done.response.dataDisks[0].mode, 'READ_ONLY');
    const disk = (await compute.disks.get({project: PROJECT, zone: ZONE, disk: 'shared'})).data;
    assert.equal(disk.users.length, 1);
    assert.match(disk.users[0], /\/projects\/fidelity-disks\/zones\/us-central2-b\/instances\/t1v-n-[0-9a-f]{8}-w-0$/);
    await assert.rejects(compute.disks.delete({project: PROJECT, zone: ZONE, disk: 'shared'}),
                         (e) => e.code === 400 && e.response.data.error.errors[0].reason === 'resourceInUseByAnotherResource');
  });

  await t.test('deleting the node releases the disk, which then deletes', async () => {
    const del = await tpu.projects.locations.nodes.delete({name: `${PARENT}/nodes/reader`});
    await tpuDone(del.data);
    const disk = (await compute.disks.get({project: PROJECT, zone: ZONE, disk: 'shared'})).data;
    assert.equal(disk.users, undefined);
    const res = await compute.disks.delete({project: PROJECT, zone: ZONE, disk: 'shared'});
    assert.equal(res.data.operationType, 'delete');
    await computeDone(res.data);
    await assert.rejects(compute.disks.get({project: PROJECT, zone: ZONE, disk: 'shared'}), (e) => e.code === 404);
  });
});
