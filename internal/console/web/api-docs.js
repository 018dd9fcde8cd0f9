// The console API reference: internal/console/openapi.json, as this server serves it, rendered
// by the vendored Redoc bundle (scripts/vendor-redoc.sh). Nothing is fetched from another
// origin, so the page works offline, and it is always the document the server runs.
'use strict';

(() => {
  const SYSTEM_FONTS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", sans-serif';

  function start() {
    const msg = document.getElementById('api-docs-msg');
    if (typeof Redoc === 'undefined') {
      msg.textContent = 'The API reference renderer did not load; read /openapi.json instead.';
      return;
    }
    Redoc.init('/openapi.json', {
      expandResponses: '200,201',
      hideHostname: true,
      jsonSampleExpandLevel: 3,
      // No web worker: the page's Content-Security-Policy allows scripts from this origin only.
      disableSearch: true,
      theme: {
        colors: { primary: { main: '#0b5cad' } },
        typography: { fontFamily: SYSTEM_FONTS, headings: { fontFamily: SYSTEM_FONTS } },
        sidebar: { width: '280px' },
      },
    }, document.getElementById('redoc'), (err) => {
      if (err) msg.textContent = 'The API reference could not be rendered (' + String(err.message || err) + '); read /openapi.json instead.';
      else msg.remove();
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
