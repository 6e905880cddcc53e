// Live status: poll /ui/live for the jobs on the page that have not finished, update their cells.
(function () {
  "use strict";
  function pending() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-job][data-terminal='no']"));
  }
  function set(el, field, text, cls) {
    var cell = el.querySelector("[data-field='" + field + "']");
    if (!cell) return;
    if (cls) {
      var b = document.createElement("span");
      b.className = "badge s-" + text;
      b.textContent = text;
      cell.textContent = "";
      cell.appendChild(b);
    } else if (cell.textContent !== text) {
      cell.textContent = text;
    }
  }
  function poll() {
    var els = pending();
    if (!els.length) return;
    var ids = els.map(function (e) { return e.getAttribute("data-job"); }).join(",");
    fetch("/ui/live?ids=" + encodeURIComponent(ids), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : {}; })
      .then(function (data) {
        els.forEach(function (el) {
          var j = data[el.getAttribute("data-job")];
          if (!j) return;
          set(el, "status", j.status, true);
          if (j.status === "running" && j.stage && el.tagName === "TR") {
            var s = el.querySelector("[data-field='status']");
            s.appendChild(document.createTextNode(" " + j.stage));
          }
          set(el, "stage", j.stage);
          set(el, "outcome", j.outcome);
          set(el, "cause", j.cause);
          set(el, "speedup", j.speedup);
          if (j.terminal) {
            el.setAttribute("data-terminal", "yes");
            var more = el.querySelector("[data-field='reload']");
            if (more) more.hidden = false;
            var cancel = el.querySelector("#cancel-form");
            if (cancel) cancel.hidden = true;
          }
        });
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, 1500); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (pending().length) setTimeout(poll, 1000);
  });
})();
