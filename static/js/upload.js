/*
 * The upload box of a submission page: drag and drop (or choose) one bundle or several run archives,
 * hash each file in the browser (incremental SHA-256: js-sha256, vendored in static/vendor/js-sha256/), then use
 * the chunked API:
 *   POST /api/v1/uploads/ -> PUT /api/v1/uploads/<id>/parts/<i>/ (retried with backoff) -> POST .../finish/
 * When the portal stores in S3 it answers the start with transfer "direct": each part is then signed by the portal
 * (POST .../sign/ with the part's MD5, js-md5 in static/vendor/js-md5/) and PUT straight to the bucket, never
 * through the portal; finish answers 202 while a worker verifies the SHA-256, and the page polls the upload.
 * Several files become one version: every finish but the last keeps its upload waiting
 * (create_version=false), the last one names the others in include_uploads.
 * Resume: each started upload is remembered in localStorage under the file's name, size and date; choosing
 * the same file again asks the server which parts it already has (GET /api/v1/uploads/<id>/) and sends
 * only the missing ones. A dropped connection mid-upload is retried in place, waiting for "online".
 * An upload idle longer than PORTAL_UPLOAD_EXPIRY_HOURS is aborted by the server: the remembered id is then
 * forgotten and the file starts over.
 */
(function () {
  "use strict";
  var HASH_SLICE = 4 * 1024 * 1024;
  var MAX_TRIES = 8;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function sizeText(bytes) {
    var units = ["bytes", "KB", "MB", "GB", "TB"], i = 0;
    while (bytes >= 1024 && i < units.length - 1) { bytes /= 1024; i++; }
    return (i ? bytes.toFixed(1) : bytes) + " " + units[i];
  }
  function sleep(ms) { return new Promise(function (resolve) { setTimeout(resolve, ms); }); }
  function waitOnline() {
    if (navigator.onLine !== false) { return Promise.resolve(); }
    return new Promise(function (resolve) { window.addEventListener("online", resolve, { once: true }); });
  }

  function Uploader(root) {
    this.root = root;
    this.submission = root.getAttribute("data-submission");
    this.api = root.getAttribute("data-api");
    this.csrf = root.getAttribute("data-csrf");
    // This portal runs the check inside the request that creates the version (no worker, e.g. the demo).
    this.inlineCheck = root.getAttribute("data-inline-check") === "1";
    this.input = root.querySelector("[data-file-input]");
    this.list = root.querySelector("[data-file-list]");
    this.button = root.querySelector("[data-start]");
    this.status = root.querySelector("[data-status]");
    this.items = [];
    this.busy = false;
    this.bind();
  }

  Uploader.prototype.bind = function () {
    var self = this, zone = this.root.querySelector("[data-dropzone]");
    this.input.addEventListener("change", function () { self.choose(self.input.files); });
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (event) { self.choose(event.dataTransfer.files); });
    this.button.addEventListener("click", function () { self.run(); });
  };

  Uploader.prototype.choose = function (files) {
    if (this.busy) { return; }
    this.items = [];
    this.list.textContent = "";
    Array.prototype.slice.call(files || []).sort(function (a, b) { return a.name < b.name ? -1 : 1; })
      .forEach(function (file) {
        var row = el("li", "upload-file");
        var name = el("span", "name", file.name + " ");
        name.appendChild(el("span", "muted", sizeText(file.size)));
        var bar = el("progress"); bar.max = 100; bar.value = 0;
        var note = el("span", "note muted", "ready");
        row.appendChild(name); row.appendChild(bar); row.appendChild(note);
        this.list.appendChild(row);
        this.items.push({ file: file, bar: bar, note: note, row: row });
      }, this);
    this.button.disabled = this.items.length === 0;
    this.say(this.items.length ? this.items.length + " file(s) ready: they become one new version." : "");
  };

  Uploader.prototype.say = function (text, bad) {
    this.status.textContent = text;
    this.status.classList.toggle("error", !!bad);
  };

  Uploader.prototype.request = function (method, url, body, headers) {
    var self = this;
    headers = Object.assign({ "X-CSRFToken": this.csrf, "Accept": "application/json" }, headers || {});
    var attempt = 0;
    function once() {
      return fetch(url, { method: method, body: body, headers: headers, credentials: "same-origin" })
        .then(function (response) {
          return response.text().then(function (text) {
            var data = null;
            try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text.slice(0, 200) }; }
            if (response.status >= 500 || response.status === 429) { throw { retry: true, status: response.status }; }
            return { status: response.status, data: data || {} };
          });
        })
        .catch(function (problem) {
          attempt += 1;
          if ((problem && problem.retry === false) || attempt >= MAX_TRIES) { throw problem; }
          self.say("Connection problem; retrying (" + attempt + "/" + (MAX_TRIES - 1) + ")…");
          return waitOnline().then(function () { return sleep(Math.min(500 * Math.pow(2, attempt - 1), 8000)); })
            .then(once);
        });
    }
    return once();
  };

  Uploader.prototype.json = function (method, url, payload) {
    return this.request(method, url, JSON.stringify(payload), { "Content-Type": "application/json" });
  };

  function failure(result, what) {
    var data = result.data || {};
    var error = new Error(what + ": " + (data.detail || ("HTTP " + result.status)));
    error.code = data.code;
    return error;
  }

  Uploader.prototype.hash = function (item) {
    var file = item.file, hasher = window.sha256.create(), offset = 0;
    item.note.textContent = "computing SHA-256…";
    function next() {
      if (offset >= file.size) { return Promise.resolve(hasher.hex()); }
      var end = Math.min(offset + HASH_SLICE, file.size);
      return file.slice(offset, end).arrayBuffer().then(function (buffer) {
        hasher.update(new Uint8Array(buffer));
        offset = end;
        item.bar.value = Math.round(100 * offset / file.size);
        return next();
      });
    }
    return next();
  };

  Uploader.prototype.memoryKey = function (file) {
    return "portal-upload:" + this.submission + ":" + file.name + ":" + file.size + ":" + file.lastModified;
  };

  // An earlier, unfinished upload of the same file, if the server still has it open (or verified).
  Uploader.prototype.resumable = function (item) {
    var self = this, raw = window.localStorage.getItem(this.memoryKey(item.file));
    if (!raw) { return Promise.resolve(null); }
    var memory = JSON.parse(raw);
    return this.request("GET", this.api + memory.id + "/").then(function (result) {
      var upload = result.data;
      if (result.status === 200 && ["open", "verifying", "verified"].indexOf(upload.status) >= 0) {
        item.sha256 = memory.sha256;
        return upload;
      }
      window.localStorage.removeItem(self.memoryKey(item.file));
      return null;
    });
  };

  Uploader.prototype.start = function (item) {
    var self = this;
    return this.hash(item).then(function (sha256) {
      item.sha256 = sha256;
      return self.json("POST", self.api, {
        submission: Number(self.submission), filename: item.file.name, size: item.file.size, sha256: sha256,
        transfer: "auto"
      });
    }).then(function (result) {
      if (result.status !== 201) { throw failure(result, item.file.name); }
      window.localStorage.setItem(self.memoryKey(item.file), JSON.stringify({ id: result.data.id, sha256: item.sha256 }));
      return result.data;
    });
  };

  Uploader.prototype.sendParts = function (item, upload) {
    var self = this, file = item.file, missing = (upload.missing_parts || []).slice();
    var have = upload.parts_expected - missing.length;
    function show() {
      item.bar.value = Math.round(100 * have / Math.max(upload.parts_expected, 1));
      item.note.textContent = "uploading: " + have + " of " + upload.parts_expected + " parts";
    }
    show();
    function next() {
      if (!missing.length) { return Promise.resolve(); }
      var index = missing.shift();
      var body = file.slice(index * upload.part_size, Math.min((index + 1) * upload.part_size, file.size));
      var sent = upload.transfer === "direct"
        ? self.putDirect(upload, index, body)
        : self.request("PUT", self.api + upload.id + "/parts/" + index + "/", body,
                       { "Content-Type": "application/octet-stream" });
      return sent
        .then(function (result) {
          if (result.status === 409 && result.data.code === "upload-closed") {
            // Aborted meanwhile, or expired after being idle too long: forget it, so choosing again starts over.
            window.localStorage.removeItem(self.memoryKey(file));
            throw new Error(file.name + ": the portal discarded this unfinished upload (aborted, or idle too long). " +
                            "Choose the files again to start over.");
          }
          if (result.status !== 200) { throw failure(result, file.name + " part " + index); }
          have += 1;
          show();
          return next();
        });
    }
    return next();
  };

  // A direct upload's part: signed by the portal for its length and MD5, then PUT to the bucket itself.
  Uploader.prototype.putDirect = function (upload, index, body) {
    var self = this;
    return body.arrayBuffer().then(function (buffer) {
      var md5 = window.md5.base64(buffer);
      return self.json("POST", self.api + upload.id + "/sign/", { parts: [{ index: index, content_md5: md5 }] })
        .then(function (signed) {
          if (signed.status !== 200) { throw failure(signed, "part " + index); }
          var part = signed.data.parts[0], attempt = 0;
          function once() {
            // The browser sets Content-Length itself; Content-MD5 is the signed header.
            return fetch(part.url, { method: "PUT", body: buffer, credentials: "omit",
                                     headers: { "Content-MD5": part.headers["Content-MD5"] } })
              .then(function (response) {
                if (response.ok) { return { status: 200, data: {} }; }
                if (response.status >= 500) { throw { retry: true, status: response.status }; }
                return response.text().then(function (text) {
                  var code = (/<Code>([^<]+)<\/Code>/.exec(text) || [])[1] || ("HTTP " + response.status);
                  return { status: response.status, data: { detail: "the bucket refused the part (" + code + ")" } };
                });
              })
              .catch(function (problem) {
                attempt += 1;
                if (attempt >= MAX_TRIES) { throw problem; }
                self.say("Connection problem; retrying (" + attempt + "/" + (MAX_TRIES - 1) + ")…");
                return waitOnline().then(function () { return sleep(Math.min(500 * Math.pow(2, attempt - 1), 8000)); })
                  .then(once);
              });
          }
          return once();
        });
    });
  };

  // Poll a direct upload while the portal's worker verifies it; then its version (if it made one).
  Uploader.prototype.verified = function (upload) {
    var self = this;
    function poll() {
      return self.request("GET", self.api + upload.id + "/").then(function (result) {
        var current = result.data;
        if (current.status === "verifying") { return sleep(1000).then(poll); }
        if (current.status === "aborted") { throw new Error(current.error_message || "the portal aborted the upload"); }
        if (current.version === null || current.version === undefined) { return { upload: current, version: null }; }
        return self.request("GET", self.api.replace(/uploads\/$/, "versions/") + current.version + "/")
          .then(function (version) { return { upload: current, version: version.data }; });
      });
    }
    return poll();
  };

  Uploader.prototype.finish = function (item, upload, last, others) {
    var self = this, started = Date.now(), timer = null;
    var checking = last && this.inlineCheck;
    var what = checking
      ? "verifying, then checking every load point (this portal checks inside this request)"
      : (last ? "verifying on the server and creating the version" : "verifying on the server");
    function tick() {
      var seconds = Math.round((Date.now() - started) / 1000);
      item.note.textContent = what + "… " + seconds + " s";
    }
    tick();
    item.row.classList.add("working");
    item.bar.removeAttribute("value");  // an indeterminate bar: the server is working, nothing left to send
    timer = window.setInterval(tick, 1000);
    if (checking) { this.say("Checking version: every metric is being recomputed from the raw logs…"); }
    function stop() { window.clearInterval(timer); item.row.classList.remove("working"); }
    return this.json("POST", this.api + upload.id + "/finish/", {
      sha256: item.sha256, create_version: last, include_uploads: last ? others : []
    }).then(function (result) {
      if (result.status === 202 && result.data.upload && result.data.upload.transfer === "direct") {
        return self.verified(upload).then(function (done) { return { status: 200, data: done }; });
      }
      return result;
    }).then(function (result) {
      stop();
      if (result.status !== 200) {
        if (result.data.code === "upload-hash-mismatch") { window.localStorage.removeItem(self.memoryKey(item.file)); }
        throw failure(result, item.file.name);
      }
      item.bar.value = 100;
      item.note.textContent = last ? "done: version " + result.data.version.number + " created" : "verified";
      item.row.classList.add("done");
      return result.data;
    }, function (error) { stop(); throw error; });
  };

  Uploader.prototype.run = function () {
    var self = this, ids = [], items = this.items.slice();
    if (this.busy || !items.length) { return; }
    this.busy = true;
    this.button.disabled = true;
    this.input.disabled = true;
    this.say("Uploading " + items.length + " file(s)…");
    var chain = Promise.resolve();
    items.forEach(function (item, position) {
      var last = position === items.length - 1;
      chain = chain.then(function () { return self.resumable(item); })
        .then(function (upload) { return upload || self.start(item); })
        .then(function (upload) {
          var parts = upload.status === "open" ? self.sendParts(item, upload) : Promise.resolve();
          // An upload the bucket already holds whole (or one being verified) goes straight to its finish.
          return parts.then(function () { return self.finish(item, upload, last, ids.slice()); })
            .then(function (done) { ids.push(upload.id); return done; });
        });
    });
    chain.then(function (done) {
      items.forEach(function (item) { window.localStorage.removeItem(self.memoryKey(item.file)); });
      self.say("Upload complete: version " + done.version.number + " is being checked.");
      window.location.assign("?version=" + done.version.number + "#check");
    }).catch(function (error) {
      self.busy = false;
      self.button.disabled = false;
      self.input.disabled = false;
      self.say((error && error.message) || "The upload stopped. Choose the same files again to resume.", true);
    });
  };

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-upload]").forEach(function (root) { new Uploader(root); });
  });
})();
