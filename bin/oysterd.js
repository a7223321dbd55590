#!/usr/bin/env node
// Entry point installed as `oysterd`; the code is compiled TypeScript in dist/.
require('../dist/src/cli/oysterd.js');
