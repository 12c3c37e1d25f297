// Form behaviours of the portal: the unsaved-changes guard and the error summary.
// A served file because the Content-Security-Policy allows no inline script.
//
// Unsaved changes: a form marked `data-unsaved-guard` becomes dirty on the first edit (typing,
// choosing, adding or removing a row). While one is dirty, leaving the page asks first: the browser's
// own prompt on unload (links, reload, closing the tab), and a confirm before an htmx request that
// would navigate (one that pushes a URL or is boosted) or swap the form away. Submitting the form
// itself is not leaving.
(() => {
  "use strict"
  const dirty = new Set()
  const guarded = (el) => (el instanceof Element ? el.closest("form[data-unsaved-guard]") : null)
  const mark = (event) => {
    const form = guarded(event.target)
    // The change note and other fields marked data-guard-ignore do not make a form dirty by themselves.
    if (form && !(event.target instanceof Element && event.target.closest("[data-guard-ignore]"))) dirty.add(form)
  }
  document.addEventListener("input", mark, true)
  document.addEventListener("change", mark, true)
  document.addEventListener("rows-changed", mark, true)
  document.addEventListener("submit", (event) => {
    const form = guarded(event.target)
    if (form) dirty.delete(form)
  }, true)
  const anyDirty = () => [...dirty].some((f) => f.isConnected)
  window.addEventListener("beforeunload", (event) => {
    if (!anyDirty()) return
    event.preventDefault()
    event.returnValue = ""
  })
  // An htmx request leaves the page when it pushes a URL, is boosted (a link or form under hx-boost),
  // or swaps content that holds a dirty form (hx-target="body", "#main", an ancestor of the form):
  // none of these unloads the page, so the browser's own prompt never comes.
  const leaves = (source, target) => {
    if (source.closest("[hx-push-url]:not([hx-push-url='false']), [hx-boost='true']") !== null) return true
    return target instanceof Element && [...dirty].some((f) => f.isConnected && target.contains(f))
  }
  document.addEventListener("htmx:confirm", (event) => {
    const source = event.target instanceof Element ? event.target : null
    if (source === null || !anyDirty()) return
    // A request from inside the dirty form itself (its submit, a select updating its own field) is not leaving.
    if ([...dirty].some((f) => f.contains(source))) return
    if (!leaves(source, event.detail.target)) return
    event.preventDefault()
    if (window.confirm("You have unsaved changes. Leave this page without saving them?")) {
      dirty.clear()
      event.detail.issueRequest(true)
    }
  })

  // An error summary (rendered with the page after a refused save) takes the focus, so a keyboard or
  // screen-reader user hears it first; its links move to the field they name.
  const focusSummary = () => {
    const summary = document.querySelector(".error-summary")
    if (summary instanceof HTMLElement) summary.focus()
  }
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest(".error-summary a[href^='#']") : null
    if (link === null) return
    const target = document.getElementById(link.getAttribute("href").slice(1))
    if (target === null) return
    event.preventDefault()
    const holder = target.closest(".field, [data-row], fieldset") || target
    const control = holder.querySelector("input:not([type=hidden]), select, textarea, button")
    target.scrollIntoView({ block: "center" })
    if (control instanceof HTMLElement) control.focus()
  })

  // Live checks flag only the fields the user has reached: a field's problems stay hidden until it was
  // edited or left once (or the form was submitted), so an empty form is not a wall of red.
  const touch = (event) => {
    const holder = event.target instanceof Element ? event.target.closest("[data-slot]") : null
    if (holder) holder.setAttribute("data-touched", "")
  }
  document.addEventListener("focusout", touch, true)
  document.addEventListener("input", touch, true)

  // A refused form swapped in by htmx (a same-page change) gets the same focus as a page load.
  document.addEventListener("htmx:afterSettle", (event) => {
    const target = event.detail && event.detail.target
    if (target instanceof Element && target.querySelector(".error-summary") !== null) focusSummary()
  })

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusSummary)
  else focusSummary()
})()
