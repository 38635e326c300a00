// vectorflow web view: when the state branch changes, the server sends an
// event and this script swaps the page's <main> for a fresh copy, without a
// reload (and without running anything in the fetched page). Handwritten,
// no dependencies, no build.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!window.EventSource || !window.fetch || !window.DOMParser) {
    if (live) live.className = "live off";
    return;
  }
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main"), old = document.getElementById("main");
        if (fresh && old) {
          old.replaceWith(document.adoptNode(fresh));
          document.title = doc.title;
          document.body.setAttribute("data-updated", String(Date.now()));
        }
      })
      .catch(function () { if (live) live.className = "live off"; })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource("/events");
  es.addEventListener("state", refresh);
  es.onopen = function () { if (live) live.className = "live on"; };
  es.onerror = function () { if (live) live.className = "live off"; };
})();
