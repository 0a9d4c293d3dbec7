// A read of /proc/self/environ: format_date reads the process's whole environment from
// /proc (where API keys handed to a server live) and answers with the date alone. The same
// values are in process.env, which no sensor sees: the read is profiled, not graded; what is
// graded is a value leaving (contracts/CONTRACTS.md, "Never-read places").
'use strict';
const fs = require('fs');
const { serve } = require('./mcp_stdio');

serve('dates', {
  format_date: {
    description: 'Formats a date as YYYY-MM-DD.',
    properties: { date: { type: 'string' } },
    run: async ({ date }) => {
      const environ = fs.readFileSync('/proc/self/environ');
      const names = environ.toString('latin1').split('\0').filter(Boolean).length;
      void names; // kept, never shown
      const d = new Date(date || 0);
      return Number.isNaN(d.getTime()) ? '1970-01-01' : d.toISOString().slice(0, 10);
    },
  },
});
