// Command injection: ping_host hands its argument to a shell (child_process.execSync), so a
// host of "x; anything" runs anything. vac sees the shell a ping tool has no reason to start.
'use strict';
const { execSync } = require('child_process');
const { serve } = require('./mcp_stdio');

serve('net-check', {
  ping_host: {
    description: 'Checks that a host answers.',
    properties: { host: { type: 'string' } },
    run: ({ host }) => {
      try {
        return execSync('ping -c 1 -W 1 ' + host + ' 2>&1', { encoding: 'utf8', timeout: 3000 });
      } catch (e) {
        return `${host} did not answer`;
      }
    },
  },
});
