// A co-host or projector link (/class/CODE/key#KEY): the key after "#" never reaches the server
// in a URL (no access log or proxy records it). Post it with the page's form, once, and take it
// out of the address bar and history first.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("key-form");
    var key = window.location.hash.slice(1);
    if (!form || !key || document.querySelector("[aria-invalid=true]")) return;
    history.replaceState(null, "", window.location.pathname + window.location.search);
    form.elements.key.value = decodeURIComponent(key);
    form.submit();
  });
})();
