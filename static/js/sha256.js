/*
 * Incremental SHA-256 (FIPS 180-4) for the upload page. crypto.subtle.digest only hashes a whole
 * buffer at once, which does not fit multi-GB bundles in memory; this one takes the file slice by
 * slice: var h = new PortalSha256(); h.update(uint8array); ...; h.hex().
 */
(function (global) {
  "use strict";
  var K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
  ]);

  function Sha256() {
    this.state = new Uint32Array([
      0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
    ]);
    this.block = new Uint8Array(64);   // bytes waiting for a full 64-byte block
    this.blockLength = 0;
    this.bytesHashed = 0;               // total length; a Number is exact up to 2^53 bytes
    this.w = new Uint32Array(64);
    this.finished = false;
  }

  Sha256.prototype.compress = function (bytes, offset) {
    var w = this.w, s = this.state, i, t1, t2;
    for (i = 0; i < 16; i++) {
      var j = offset + i * 4;
      w[i] = ((bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3]) >>> 0;
    }
    for (i = 16; i < 64; i++) {
      var x = w[i - 15], y = w[i - 2];
      var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    var a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (i = 0; i < 64; i++) {
      var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      var ch = (e & f) ^ (~e & g);
      t1 = (h + S1 + ch + K[i] + w[i]) >>> 0;
      var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      var maj = (a & b) ^ (a & c) ^ (b & c);
      t2 = (S0 + maj) >>> 0;
      h = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
    }
    s[0] = (s[0] + a) >>> 0; s[1] = (s[1] + b) >>> 0; s[2] = (s[2] + c) >>> 0; s[3] = (s[3] + d) >>> 0;
    s[4] = (s[4] + e) >>> 0; s[5] = (s[5] + f) >>> 0; s[6] = (s[6] + g) >>> 0; s[7] = (s[7] + h) >>> 0;
  };

  Sha256.prototype.update = function (data) {
    if (this.finished) { throw new Error("SHA-256 already finished"); }
    var i = 0, n = data.length;
    this.bytesHashed += n;
    if (this.blockLength > 0) {        // top up the pending partial block first
      while (this.blockLength < 64 && i < n) { this.block[this.blockLength++] = data[i++]; }
      if (this.blockLength === 64) { this.compress(this.block, 0); this.blockLength = 0; }
    }
    for (; i + 64 <= n; i += 64) { this.compress(data, i); }   // whole blocks straight from the input
    while (i < n) { this.block[this.blockLength++] = data[i++]; }
    return this;
  };

  Sha256.prototype.hex = function () {
    if (!this.finished) {
      var bits = this.bytesHashed * 8;
      var tail = new Uint8Array((this.blockLength < 56 ? 64 : 128) - this.blockLength);
      tail[0] = 0x80;
      var high = Math.floor(bits / 0x100000000), low = bits >>> 0, end = tail.length;
      tail[end - 8] = high >>> 24; tail[end - 7] = high >>> 16; tail[end - 6] = high >>> 8; tail[end - 5] = high;
      tail[end - 4] = low >>> 24; tail[end - 3] = low >>> 16; tail[end - 2] = low >>> 8; tail[end - 1] = low;
      var counted = this.bytesHashed;
      this.update(tail);
      this.bytesHashed = counted;
      this.finished = true;
    }
    var out = "";
    for (var k = 0; k < 8; k++) { out += ("00000000" + this.state[k].toString(16)).slice(-8); }
    return out;
  };

  global.PortalSha256 = Sha256;
})(window);
