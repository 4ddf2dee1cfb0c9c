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
      .then(function (r) {
        if (r.ok) return r.text();
        // A run that failed is gone (404); the server's page says why, in its first paragraph.
        if (r.status === 404 && runId) {
          r.text().then(function (html) {
            var why = new DOMParser().parseFromString(html, "text/html").querySelector("p");
            say("Stopped: " + (why ? why.textContent : "this run is gone"));
          });
        }
        return null;
      })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (!fresh || !main) return;
        // Keep what the reader typed or chose (the index's filters) and which details are open.
        var fields = main.querySelectorAll("input[id], select[id], textarea[id]");
        Array.prototype.forEach.call(fields, function (el) {
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
  // Between events, running agents' elapsed times (and the debate's) tick: each counts on from
  // what the page said when it was rendered (data-ticking), by the browser's clock since then.
  var shown = performance.now();
  function tick() {
    var since = (performance.now() - shown) / 1000;
    Array.prototype.forEach.call(document.querySelectorAll("[data-ticking]"), function (el) {
      var from = parseFloat(el.getAttribute("data-ticking"));
      if (isFinite(from)) el.textContent = (from + since).toFixed(1);
    });
  }
  document.addEventListener("freemad:refreshed", function () { shown = performance.now(); });
  setInterval(tick, 1000);
  function soon() {
    if (timer === null) timer = setTimeout(refresh, 250);
  }
  // A refused stream (429: this address has its share of live pages; 503: the server has all
  // it holds) is not retried by the browser. Try again later, later each time (5 s doubling to
  // 5 min, spread so pages refused together do not come back together); the page meanwhile is
  // what it was, and once a stream opens again it is fetched afresh, for what it missed.
  var address = document.body.getAttribute("data-events"), refused = 0;
  function connect() {
    var source = new EventSource(address);
    source.addEventListener("run", function (e) {
      if (seen.has(e.lastEventId)) return;
      seen.add(e.lastEventId);
      var change = JSON.parse(e.data);
      if (!runId || change.run_id === runId) soon();
    });
    source.onopen = function () {
      if (refused > 0) soon();
      refused = 0;
      say("Live: connected");
    };
    source.onerror = function () {
      if (source.readyState !== EventSource.CLOSED) {
        say("Live: reconnecting…");  // the connection dropped: the browser tries again itself
        return;
      }
      source.close();
      var delay = Math.min(300, 5 * Math.pow(2, refused)) * (1 + Math.random() / 2);
      refused += 1;
      say("Live: paused, the server is busy (this page still works); trying again in " +
          Math.round(delay) + " s");
      setTimeout(connect, delay * 1000);
    };
  }
  connect();
})();
