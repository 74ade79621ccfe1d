// postel's dashboard, live without reloading. An element with data-live-src is re-rendered
// from that URL (a fragment the server renders) when its data-stream (Server-Sent Events)
// reports an event, at most every 300 ms, and every data-refresh-ms if set (until the stream
// ends). Open <details> and ticked checkboxes (by data-key) and the scroll position survive
// a refresh. Forms with data-confirm ask first. Live updates start only once the page has
// loaded, so a page is whole, and loaded, without them (a headless screenshot ends); with
// ?static=1 they never start.
(function () {
  "use strict";

  function keepOpen(element) {
    const open = new Set();
    const ticked = new Set();
    element.querySelectorAll("details[data-key][open]").forEach(function (d) {
      open.add(d.dataset.key);
    });
    element.querySelectorAll("input[type=checkbox][data-key]").forEach(function (box) {
      if (box.checked) ticked.add(box.dataset.key);
    });
    return function restore() {
      element.querySelectorAll("details[data-key]").forEach(function (d) {
        if (open.has(d.dataset.key)) d.open = true;
      });
      element.querySelectorAll("input[type=checkbox][data-key]").forEach(function (box) {
        if (ticked.has(box.dataset.key)) box.checked = true;
      });
    };
  }

  function liven(element) {
    let timer = null;
    let busy = false;
    let again = false;
    const indicator = document.getElementById("live-indicator");

    async function refresh() {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      try {
        const response = await fetch(element.dataset.liveSrc, {
          credentials: "same-origin",
          headers: { Accept: "text/html" },
        });
        if (response.ok) {
          const html = await response.text();
          const restore = keepOpen(element);
          element.innerHTML = html;
          restore();
          element.dispatchEvent(new CustomEvent("postel:refreshed", { bubbles: true }));
        }
      } catch (error) {
        if (indicator) indicator.dataset.state = "down";
      } finally {
        busy = false;
        if (again) {
          again = false;
          schedule();
        }
      }
    }

    function schedule() {
      if (timer !== null) return;
      timer = setTimeout(function () {
        timer = null;
        refresh();
      }, 300);
    }

    let interval = null;
    if (element.dataset.stream) {
      const source = new EventSource(element.dataset.stream);
      source.addEventListener("open", function () {
        if (indicator) indicator.dataset.state = "live";
        // what happened between the page being served and the stream opening (or while it
        // was down) sent no event here: read the part once now
        schedule();
      });
      source.addEventListener("error", function () {
        if (indicator) indicator.dataset.state = "down";
      });
      source.addEventListener("hop", schedule);
      source.addEventListener("end", function () {
        schedule();
        source.close();
        if (interval !== null) clearInterval(interval);
        if (indicator) indicator.dataset.state = "done";
      });
    }
    if (element.dataset.refreshMs) {
      interval = setInterval(schedule, Number(element.dataset.refreshMs));
    }
  }

  function start() {
    if (new URLSearchParams(window.location.search).get("static") === "1") return;
    document.querySelectorAll("[data-live-src]").forEach(liven);
  }

  if (document.readyState === "complete") {
    start();
  } else {
    window.addEventListener("load", start);
  }

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });
})();
