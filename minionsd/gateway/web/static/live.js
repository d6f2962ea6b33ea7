// Live refresh of the overview: an opt-in box, shown only when scripts run, that reloads the
// page every 10 seconds while the tab is visible. Nothing is fetched from elsewhere.
(function () {
  "use strict";
  var box = document.getElementById("live-refresh");
  var label = document.getElementById("live-label");
  if (!box || !label) { return; }
  box.hidden = false;
  label.hidden = false;
  box.checked = window.sessionStorage.getItem("minions-live") === "1";
  box.addEventListener("change", function () {
    window.sessionStorage.setItem("minions-live", box.checked ? "1" : "0");
  });
  window.setInterval(function () {
    if (box.checked && document.visibilityState === "visible") {
      window.location.reload();
    }
  }, 10000);
}());
