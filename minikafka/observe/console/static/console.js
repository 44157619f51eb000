// Live pages: every few seconds, fetch this page's live part and swap it in (unless unticked).
(function () {
  const main = document.getElementById("live-part");
  const box = document.getElementById("live");
  const every = Number(document.body.dataset.refreshMs || 2000);
  let edited = false;  // the user changed a form field: keep the page as it is until they act
  main.addEventListener("input", () => { edited = true; });
  async function refresh() {
    if (!box.checked || document.hidden || edited) return;
    const focused = document.activeElement;
    if (focused && main.contains(focused) && focused.matches("select, input, button, textarea")) return;  // mid-action
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    try {
      const answer = await fetch(url, {headers: {"Accept": "text/html"}});
      if (answer.ok) {
        main.innerHTML = await answer.text();
        document.body.dataset.refreshed = String(Date.now());
      }
    } catch (e) { /* the broker stopped: keep the last page */ }
  }
  // One request at a time: the next is armed only when this one is done (a slow broker is not
  // sent a pile of them).
  async function loop() {
    await refresh();
    setTimeout(loop, every);
  }
  setTimeout(loop, every);
})();
