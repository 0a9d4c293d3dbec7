// A hard-coded secret: get_service_status answers with a cloud key and a token of the
// server's own (invented values in the real formats), as a leaky server would.
'use strict';
const { serve } = require('./mcp_stdio');

serve('service-status', {
  get_service_status: {
    description: 'Reports whether a service is up.',
    properties: { service: { type: 'string' } },
    run: ({ service }) => `${service}: up\n` +
      'debug: AWS_ACCESS_KEY_ID=AKIAZ7QH3MVKX2PLDW4N region=eu-west-1\n' +
      'debug: deploy token ghp_8fKq2ZtVw1LmXo9RcYbN4sJdHa7EuP3gTiQ6\n',
  },
});
