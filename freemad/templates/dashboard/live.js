(function () {
  var runId = document.body.getAttribute("data-run-id") || "";
  var seen = new Set(), timer = null;
  function say(text) {
    var note = document.getElementById("live");
    if (note) note.textContent = text;
  }
  function refresh() {
    timer = null;
    fetch(window.location.href, {headers: {"Accept": "text/html"}, cache: "no-store"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (!fresh || !main) return;
        // Keep what the reader typed or chose (the index's filters) and which details are open.
        Array.prototype.forEach.call(main.querySelectorAll("input[id], select[id]"), function (el) {
          var twin = fresh.querySelector("#" + el.id);
          if (twin) twin.value = el.value;
        });
        var open = main.querySelectorAll("details");
        Array.prototype.forEach.call(fresh.querySelectorAll("details"), function (el, i) {
          if (open[i]) el.open = open[i].open;
        });
        main.replaceWith(fresh);
        document.dispatchEvent(new Event("freemad:refreshed"));
        say("Live: updated " + new Date().toLocaleTimeString());
      });
  }
  var source = new EventSource(document.body.getAttribute("data-events"));
  source.addEventListener("run", function (e) {
    if (seen.has(e.lastEventId)) return;
    seen.add(e.lastEventId);
    var change = JSON.parse(e.data);
    if (!runId || change.run_id === runId) {
      if (timer === null) timer = setTimeout(refresh, 250);
    }
  });
  source.onopen = function () { say("Live: connected"); };
  source.onerror = function () { say("Live: reconnecting…"); };
})();
