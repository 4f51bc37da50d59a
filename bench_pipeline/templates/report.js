(function () {
  "use strict";

  // Data for sorting, filtering and lazy attempt details: parsed on first use only.
  var payload = null;
  function data() {
    if (payload === null) {
      var node = document.getElementById("report-data");
      payload = node ? JSON.parse(node.textContent) : {};
    }
    return payload;
  }

  function compare(a, b) {
    if (typeof a === "boolean") { a = a ? 1 : 0; }
    if (typeof b === "boolean") { b = b ? 1 : 0; }
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    if (typeof a === "number") { return -1; }
    if (typeof b === "number") { return 1; }
    a = String(a).toLowerCase();
    b = String(b).toLowerCase();
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function initTable(root) {
    var name = root.getAttribute("data-table");
    var body = root.querySelector("[data-rows]");
    var rows = Array.prototype.slice.call(body.children);
    var text = root.querySelector("[data-filter-text]");
    var selects = Array.prototype.slice.call(root.querySelectorAll("select[data-filter-col]"));
    var countEl = root.querySelector("[data-count]");
    var buttons = Array.prototype.slice.call(root.querySelectorAll("button[data-sort]"));
    var haystacks = null;
    var state = { col: -1, dir: 1 };
    var timer = null;

    function keys() { return data()[name].keys; }

    function haystack(i) {
      if (haystacks === null) {
        haystacks = keys().map(function (k) {
          return k.filter(function (v) { return typeof v === "string"; }).join(" \u0001 ").toLowerCase();
        });
      }
      return haystacks[i];
    }

    function applyFilter() {
      var q = text ? text.value.trim().toLowerCase() : "";
      var exact = q.length > 1 && q.charAt(0) === "\"" && q.charAt(q.length - 1) === "\"" ? q.slice(1, -1) : null;
      var wanted = selects.map(function (s) { return [Number(s.getAttribute("data-filter-col")), s.value]; })
        .filter(function (p) { return p[1] !== ""; });
      var all = keys();
      var shown = 0;
      rows.forEach(function (row) {
        var i = Number(row.getAttribute("data-i"));
        var k = all[i];
        var ok = true;
        if (exact !== null) {
          ok = String(k[0]).toLowerCase() === exact;
        } else if (q) {
          ok = haystack(i).indexOf(q) !== -1;
        }
        for (var j = 0; ok && j < wanted.length; j++) {
          ok = String(k[wanted[j][0]]) === wanted[j][1];
        }
        row.hidden = !ok;
        if (ok) { shown++; }
      });
      if (countEl) { countEl.textContent = shown.toLocaleString("en-US") + " of " + rows.length.toLocaleString("en-US"); }
    }

    function sortBy(col, button) {
      state.dir = state.col === col ? -state.dir : 1;
      state.col = col;
      var all = keys();
      var dir = state.dir;
      var order = rows.slice().sort(function (ra, rb) {
        var ia = Number(ra.getAttribute("data-i"));
        var ib = Number(rb.getAttribute("data-i"));
        var a = all[ia][col];
        var b = all[ib][col];
        var an = a === null || a === undefined;
        var bn = b === null || b === undefined;
        if (an || bn) { return an && bn ? ia - ib : an ? 1 : -1; }  // unavailable values always last
        return compare(a, b) * dir || ia - ib;
      });
      var frag = document.createDocumentFragment();
      order.forEach(function (row) { frag.appendChild(row); });
      body.appendChild(frag);
      rows = order;
      buttons.forEach(function (b) { b.removeAttribute("aria-sort"); });
      button.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    }

    buttons.forEach(function (button) {
      button.addEventListener("click", function () { sortBy(Number(button.getAttribute("data-sort")), button); });
    });
    if (text) {
      text.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(applyFilter, rows.length > 2000 ? 180 : 60);
      });
    }
    selects.forEach(function (s) { s.addEventListener("change", applyFilter); });
    return { filterText: function (value) { if (text) { text.value = value; applyFilter(); } } };
  }

  // ---- lazy attempt details (built with textContent only: never HTML from data) ----
  var detailsPayload = null;
  function detailsData() {
    if (detailsPayload === null) {
      var node = document.getElementById("report-details");
      detailsPayload = node ? JSON.parse(node.textContent) : { labels: [], details: [] };
    }
    return detailsPayload;
  }

  var TONE = { yes: "ok", passed: "ok", no: "bad", failed: "bad" };

  function el(tag, cls, textValue) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (textValue !== undefined && textValue !== null) { node.textContent = String(textValue); }
    return node;
  }

  function renderSection(holder, section) {
    var title = section[0], kind = section[1], content = section[2];
    if (title !== null) { holder.appendChild(el("h4", null, title)); }
    if (kind === "kv") {
      var dl = el("dl");
      content.forEach(function (pair) {
        var item = el("div");
        item.appendChild(el("dt", null, pair[0]));
        item.appendChild(el("dd", null, pair[1]));
        dl.appendChild(item);
      });
      holder.appendChild(dl);
    } else if (kind === "pre") {
      holder.appendChild(el("pre", null, content));
    } else if (kind === "note") {
      holder.appendChild(el("p", "note", content));
    } else if (kind === "calls") {
      // [[name, arguments], ...], calls left out, character cap for arguments
      var calls = content[0], more = content[1], cap = content[2];
      var rows = calls.map(function (call, i) {
        var args = call[1];
        var text = typeof args === "string" ? args : JSON.stringify(args === undefined ? null : args);
        if (text.length > cap) { text = text.slice(0, cap) + "\u2026 [" + (text.length - cap).toLocaleString("en-US") + " more characters]"; }
        return [String(i + 1), call[0] === null || call[0] === undefined ? "n/a" : String(call[0]), text];
      });
      if (more > 0) { rows.push(["\u2026", more.toLocaleString("en-US") + " more", ""]); }
      renderSection(holder, [null, "table", [["#", "tool", "arguments"], rows]]);
    } else if (kind === "table") {
      var table = el("table");
      var head = el("tr");
      content[0].forEach(function (c) { head.appendChild(el("th", null, c)); });
      table.appendChild(el("thead")).appendChild(head);
      var tbody = el("tbody");
      content[1].forEach(function (r) {
        var tr = el("tr");
        r.forEach(function (c, j) {
          var cls = TONE[c] || (content[0][j] === "arguments" || content[0][j] === "actual" ? "mono" : null);
          tr.appendChild(el("td", cls, c));
        });
        tbody.appendChild(tr);
      });
      table.appendChild(tbody);
      holder.appendChild(table);
    }
  }

  function renderDetails(details) {
    if (details.getAttribute("data-rendered")) { return; }
    details.setAttribute("data-rendered", "1");
    var all = detailsData();
    var entry = all.details[Number(details.getAttribute("data-i"))] || [[], []];
    var holder = el("div", "detail");
    var facts = entry[0].map(function (value, i) { return [all.labels[i], value]; });
    renderSection(holder, ["Attempt", "kv", facts]);
    entry[1].forEach(function (section) { renderSection(holder, section); });
    details.appendChild(holder);
  }

  document.addEventListener("toggle", function (event) {
    var target = event.target;
    if (target && target.matches && target.matches("details.a[data-i]") && target.open) { renderDetails(target); }
  }, true);

  var tables = {};
  Array.prototype.forEach.call(document.querySelectorAll("[data-table]"), function (root) {
    tables[root.getAttribute("data-table")] = initTable(root);
  });

  // collapsible sections (details.sec): a link to a section, the page's address and a
  // task id's link to its attempts open it; printing shows every section
  function openSection(id) {
    var target = id ? document.getElementById(id) : null;
    var sec = target ? target.querySelector(":scope > details.sec") : null;
    if (sec && !sec.open) { sec.open = true; }
  }
  function openFromHash() { openSection(decodeURIComponent(location.hash.slice(1))); }
  openFromHash();
  window.addEventListener("hashchange", openFromHash);
  var printed = [];
  window.addEventListener("beforeprint", function () {
    printed = Array.prototype.filter.call(document.querySelectorAll("details.sec"), function (d) { return !d.open; });
    printed.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    printed.forEach(function (d) { d.open = false; });
    printed = [];
  });

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[href^='#']") : null;
    if (link) { openSection(decodeURIComponent(link.getAttribute("href").slice(1))); }
    // a task id in the task table shows that task's attempts
    var button = event.target.closest ? event.target.closest("button.tlink") : null;
    if (!button || !tables.attempts) { return; }
    openSection("attempts");
    tables.attempts.filterText("\"" + button.getAttribute("data-task") + "\"");
    document.getElementById("attempts").scrollIntoView();
  });
}());
