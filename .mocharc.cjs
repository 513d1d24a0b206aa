'use strict';
// Tests are compiled by tsc into dist/ and run from there; CI forbids a forgotten `.only`.
module.exports = {
  spec: ['dist/test/**/*.test.js'],
  timeout: 20000,
  forbidOnly: Boolean(process.env.CI),
  exit: true,
};
