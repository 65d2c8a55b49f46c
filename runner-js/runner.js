'use strict';
// cellbox kernel for JavaScript: a long-lived Node process driven over NDJSON
// pipes. The host starts it as `node --expose-internals runner.js --host-pid N
// --frames-fd 3 --diagnostics-fd 4`; everything lives in `lib/` beside it.
// `--expose-internals` gives access to the JavaScript parser Node ships for its
// own REPL (see lib/transform.js); nothing else of Node's internals is used.
require('./lib/main').main(process.argv.slice(2));
