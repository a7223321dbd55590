#!/usr/bin/env node
// Entry point installed as `oyster`; the code is compiled TypeScript in dist/.
require('../dist/src/cli/oyster.js');
