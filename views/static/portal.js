// The Kintsugi portal's few behaviours htmx does not cover: adding and removing repeated rows,
// dismissing toasts, a message when the server cannot be reached, Escape closing action menus, no
// duplicate rows on the live job page, the current section in view in a phone's navigation line.
// A served file because the Content-Security-Policy allows no inline script.
(() => {
  "use strict"
  let counter = 0

  const rowsChanged = (el) => {
    const form = el.closest("form")
    if (form) form.dispatchEvent(new Event("rows-changed", { bubbles: true }))
  }

  const addRow = (button) => {
    const kind = button.getAttribute("data-add-row")
    const template = document.getElementById(`tpl-${kind}`)
    const rows = document.getElementById(`rows-${kind}`)
    if (!(template instanceof HTMLTemplateElement) || rows === null) return
    const key = `n${Date.now().toString(36)}${(counter++).toString(36)}`
    const fragment = template.content.cloneNode(true)
    for (const el of fragment.querySelectorAll("*")) {
      for (const attr of Array.from(el.attributes)) {
        if (attr.value.includes("__KEY__")) el.setAttribute(attr.name, attr.value.replaceAll("__KEY__", key))
      }
    }
    const row = fragment.firstElementChild
    rows.appendChild(fragment)
    const first = row && row.querySelector("input:not([type=hidden]), textarea")
    if (first) first.focus()
    rowsChanged(rows)
  }

  const removeRow = (button) => {
    const row = button.closest("[data-row]")
    const section = button.closest("fieldset")
    if (row === null) return
    const form = row.closest("form")
    row.remove()
    const add = section && section.querySelector("[data-add-row]")
    if (add) add.focus()
    if (form) form.dispatchEvent(new Event("rows-changed", { bubbles: true }))
  }

  const flash = (message) => {
    const region = document.getElementById("flash")
    if (region === null) return
    const toast = document.createElement("div")
    toast.className = "toast toast-error"
    const close = document.createElement("button")
    close.type = "button"
    close.className = "toast-close"
    close.setAttribute("data-dismiss", "")
    close.setAttribute("aria-label", "Dismiss")
    close.textContent = "x"
    const text = document.createElement("strong")
    text.textContent = message
    toast.append(close, text)
    region.replaceChildren(toast)
  }

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null
    if (target === null) return
    const add = target.closest("[data-add-row]")
    if (add) return addRow(add)
    const remove = target.closest("[data-remove-row]")
    if (remove) return removeRow(remove)
    const dismiss = target.closest("[data-dismiss]")
    if (dismiss) {
      const toast = dismiss.closest(".toast")
      if (toast) toast.remove()
    }
  })

  document.addEventListener("htmx:sendError", () => flash("The server could not be reached. Check the connection and try again."))

  // A new request clears an old error toast, so it never describes a later action.
  document.addEventListener("htmx:beforeRequest", (event) => {
    const source = event.target instanceof Element ? event.target : null
    if (source && source.id === "agent-form") return
    const region = document.getElementById("flash")
    if (region) region.replaceChildren()
  })

  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return
    const open = document.activeElement && document.activeElement.closest("details[open]")
    if (open) {
      open.open = false
      const summary = open.querySelector("summary")
      if (summary) summary.focus()
    }
  })
  // On a phone the top bar's navigation is one scrolling line: the current section is scrolled into view.
  const currentNav = document.querySelector(".topbar nav [aria-current='page']")
  const navList = currentNav && currentNav.closest("ul")
  if (navList && navList.scrollWidth > navList.clientWidth) {
    navList.scrollLeft += currentNav.getBoundingClientRect().left - navList.getBoundingClientRect().left - 8
  }

  // A job's live page: htmx's SSE extension swaps in the rows the server renders (views/pages/jobs.ts).
  // A row whose event id the list already holds (a stream opened again from the page's first
  // position after an error) is dropped, so no row shows twice.
  document.addEventListener("htmx:sseBeforeMessage", (event) => {
    const message = event.detail
    const list = event.target instanceof Element ? event.target : null
    if (list === null || !message || message.type !== "row" || !/^\d+$/.test(message.lastEventId || "")) return
    const id = Number(message.lastEventId)
    if (id <= Number(list.getAttribute("data-last-seq") || "-1")) return event.preventDefault()
    list.setAttribute("data-last-seq", String(id))
  })
})()
