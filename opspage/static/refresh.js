// Live refresh of the operations page: every interval, read the server's last snapshot
// (GET PREFIX/api/queues, which makes no SQS call) and replace the text of every element
// marked data-field inside an element marked data-queue; on a queue's page, also replace
// its charts with the server's (the element marked data-charts names their address, an
// HTML fragment of inline SVG drawn by the server). No framework, no build step.
"use strict";
(function () {
  var interval = parseInt(document.body.dataset.interval, 10) || 5000;
  var base = document.body.dataset.base || "";
  function update(snapshot) {
    snapshot.queues.forEach(function (queue) {
      document.querySelectorAll("[data-queue]").forEach(function (scope) {
        if (scope.dataset.queue !== queue.name) { return; }
        scope.querySelectorAll("[data-field]").forEach(function (cell) {
          var text = queue.cells[cell.dataset.field];
          if (text !== undefined && cell.textContent !== text) { cell.textContent = text; }
        });
      });
    });
    var updated = document.getElementById("updated");
    if (updated) { updated.textContent = snapshot.at; }
  }
  function charts() {
    var section = document.querySelector("[data-charts]");
    if (!section) { return Promise.resolve(); }
    return fetch(section.dataset.charts, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) { if (html !== null) { section.innerHTML = html; } });
  }
  function tick() {
    fetch(base + "/api/queues", { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (snapshot) { if (snapshot) { update(snapshot); } })
      .then(charts)
      .catch(function () {})
      .finally(function () { setTimeout(tick, interval); });
  }
  setTimeout(tick, interval);
})();
