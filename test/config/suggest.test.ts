// "Did you mean …?" (src/config/suggest.ts): the typos an operator makes in
// bob's keys get the key they meant; keys close to nothing get no guess.
import t from 'tap';
import { closest } from '../../src/config/suggest';

t.test('typos and the keys they meant', async (t) => {
  for (const [typo, candidates, meant] of [
    ['prometheus_adr', ['prometheus_addr', 'prefix', 'name'], ['prometheus_addr']],
    ['prometheus', ['prometheus_addr', 'graphite'], ['prometheus_addr']],
    ['quorom', ['quorum', 'name'], ['quorum']],
    ['Quorum', ['quorum'], ['quorum']],
    ['timestamp_periode', ['timestamp_period', 'root_dir_name'], ['timestamp_period']],
    ['rest_read', ['read_rest', 'write_rest', 'read'], ['read_rest']],
    ['http_api_adress', ['http_api_address', 'http_api_port'], ['http_api_address']],
    ['alien_disc', ['alien_disk', 'max_blob_size'], ['alien_disk']],
    ['max_blob_sise', ['max_blob_size', 'max_data_in_blob'], ['max_blob_size']],
    ['bogus_top_level', ['quorum', 'name', 'log_config'], []],
    ['replication_factor', ['nodes', 'vdisks', 'racks', 'key_size', 'distribution_func'], []],
    ['colour', ['name', 'address'], []],
  ] as const) {
    t.same(closest(typo, candidates), meant, `${typo}: ${meant.length ? meant.join(', ') : 'no guess'}`);
  }
});

t.test('equally close keys are all named', async (t) => {
  t.same(closest('prometheus', ['prometheus_addr', 'prometheus_enabled']), ['prometheus_addr', 'prometheus_enabled']);
});
