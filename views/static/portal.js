// The Kintsugi portal's few behaviours htmx does not cover: adding and removing repeated rows,
// dismissing toasts, a message when the server cannot be reached, Escape closing action menus.
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
  // A job's live page: follow /api/jobs/:id/events with EventSource after the stored events the
  // page already shows; every row is text (textContent), never markup. The same mapping as
  // eventRow in views/pages/jobs.ts.
  const clip = (s, n) => (s.length > n ? `${s.slice(0, n)}…` : s)
  const rowOf = (e) => {
    switch (e.type) {
      case "job.started": return { kind: "started", label: "started", text: `${e.agentId} v${e.agentVersion}` }
      case "message.delta": return { kind: "message", label: "message", text: e.text }
      case "tool.call": return { kind: e.allowed ? "call" : "blocked", label: e.allowed ? "tool call" : "blocked", text: clip(`${e.tool} ${JSON.stringify(e.input)}${e.reason === undefined ? "" : ` (${e.reason})`}`, 400) }
      case "tool.result": return { kind: e.success ? "result" : "result-failed", label: e.success ? "result" : "tool failed", text: clip(`${e.tool} (${e.durationMs} ms): ${e.summary}`, 400) }
      case "output": return { kind: "output", label: "output", text: e.path }
      case "source.read": return { kind: "read", label: "read", text: `${e.path}:${e.firstLine}${e.lastLine === null ? "" : `-${e.lastLine}`}` }
      case "job.completed": return { kind: "completed", label: "completed", text: e.summary }
      case "job.failed": return { kind: "failed", label: `failed: ${e.reason}`, text: e.message }
      default: return null
    }
  }
  const money = (n) => `$${n < 0.01 ? n.toFixed(6) : n.toFixed(4)}`
  const setText = (id, text) => {
    const el = document.getElementById(id)
    if (el) el.textContent = text
  }
  const setStatus = (tone, text) => {
    const holder = document.getElementById("job-status")
    if (holder === null) return
    const b = document.createElement("span")
    b.className = `badge badge-${tone}`
    b.textContent = text
    holder.replaceChildren(b)
  }
  const followJob = (list) => {
    const url = list.getAttribute("data-events-url")
    if (!url || list.getAttribute("data-live") !== "true") return
    const append = (row) => {
      const last = list.lastElementChild
      if (row.kind === "message" && last && last.classList.contains("ev-message")) {
        const t = last.querySelector(".ev-text")
        if (t) t.textContent += row.text
        return
      }
      const li = document.createElement("li")
      li.className = `ev ev-${row.kind}`
      const label = document.createElement("span")
      label.className = "ev-label"
      label.textContent = row.label
      const text = document.createElement("span")
      text.className = "ev-text"
      text.textContent = row.text
      li.append(label, " ", text)
      list.appendChild(li)
    }
    const finish = (tone, text, failure) => {
      setStatus(tone, text)
      const abort = document.getElementById("abort-form")
      if (abort) abort.remove()
      const waiting = document.getElementById("job-waiting")
      if (waiting) waiting.remove()
      if (failure) {
        const box = document.getElementById("job-failure")
        if (box) {
          const div = document.createElement("div")
          div.className = "alert alert-error"
          div.setAttribute("role", "alert")
          const strong = document.createElement("strong")
          strong.textContent = `Failed (${failure.reason}): `
          div.append(strong, failure.message)
          box.replaceChildren(div)
        }
      }
    }
    const source = new EventSource(`${url}?after=${encodeURIComponent(list.getAttribute("data-after") || "-1")}`)
    const handle = (event) => {
      let e
      try { e = JSON.parse(event.data) } catch { return }
      if (event.type === "job.settled") {
        source.close()
        return finish(e.status === "completed" ? "ok" : "error", e.reason ? `${e.status}: ${e.reason}` : e.status, e.status === "failed" ? { reason: e.reason || "error", message: e.message || "" } : null)
      }
      if (e.type === "usage") {
        setText("job-cost", money(e.costUsd))
        setText("job-tokens", `${e.inputTokens} / ${e.outputTokens}`)
        setText("job-turns", String(e.turns))
        setText("job-model", e.model)
        return
      }
      if (e.type === "job.started") setStatus("info", "running")
      const row = rowOf(e)
      if (row) append(row)
      if (e.type === "job.completed") { source.close(); finish("ok", "completed", null) }
      if (e.type === "job.failed") { source.close(); finish("error", `failed: ${e.reason}`, { reason: e.reason, message: e.message }) }
    }
    for (const type of ["job.started", "message.delta", "tool.call", "tool.result", "output", "source.read", "usage", "job.completed", "job.failed", "job.settled"]) {
      source.addEventListener(type, handle)
    }
  }
  const startLive = () => {
    const list = document.getElementById("job-events")
    if (list) followJob(list)
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startLive)
  else startLive()
})()
