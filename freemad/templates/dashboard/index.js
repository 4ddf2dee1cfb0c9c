(function () {
  function init() {
    var text = document.getElementById("q"), kind = document.getElementById("kind"),
        status = document.getElementById("status"), shown = document.getElementById("shown");
    if (!text || !kind || !status || !shown) return;
    var rows = Array.prototype.slice.call(document.querySelectorAll("#runs tbody tr"));
    function apply() {
      var words = text.value.toLowerCase().split(/\s+/).filter(Boolean), n = 0;
      rows.forEach(function (row) {
        var hay = row.getAttribute("data-search");
        var ok = (!kind.value || row.getAttribute("data-kind") === kind.value) &&
                 (!status.value || row.getAttribute("data-status") === status.value) &&
                 words.every(function (w) { return hay.indexOf(w) !== -1; });
        row.hidden = !ok;
        if (ok) n += 1;
      });
      shown.textContent = n + " of " + rows.length + " runs shown";
    }
    [text, kind, status].forEach(function (el) { el.addEventListener("input", apply); });
    document.getElementById("filters").hidden = false;
    apply();
  }
  init();
  // The live dashboard swaps the page's content for a fresh copy: filter that one too.
  document.addEventListener("freemad:refreshed", init);
})();
