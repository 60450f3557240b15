// The calls between the tests and the candidate of a JavaScript task, which run in two node
// processes (docs/languages.md#execution): one JSON line per message, read and written
// synchronously on descriptors 3 (calls in) and 4 (calls out).
//
// A value is JSON where JSON can say it (null, booleans, finite numbers but -0, strings,
// arrays) and a one-key object where it cannot: {"undefined": null}, {"number": "NaN" |
// "Infinity" | "-Infinity" | "-0"}, {"bigint": "<decimal>"}, {"object": [[key, value], ...]}
// for a plain object (its prototype Object.prototype or null; its own enumerable string keys,
// in their order). A hole in an array crosses as undefined. Anything else (a function, a
// symbol, a Map, a Date, a class's instance, a boxed primitive) is not plain data: the
// candidate's answer is then refused and the call fails. `rebuilt` accepts these forms only,
// so the tests get values of their own, which compare as the candidate's would have under
// ===, JSON.stringify, Object.is and typeof.
//
// A call is {"args": [...], "kwargs": [], "limit": null}; an answer {"value": v}, {"raise":
// {"type": name, "args": [message]}} for what the candidate's code threw, or {"refused": why}.
const __humanfixWire = (() => {
  const fs = require('fs')
  const CALLS_IN = 3
  const CALLS_OUT = 4
  const MESSAGE_BYTES = 16 << 20
  const DEPTH = 100
  const SHOWN_CHARS = 200
  const SPECIAL_NUMBERS = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 }
  const ERRORS = { Error, TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError }
  const pause = new Int32Array(new SharedArrayBuffer(4))

  class HumanfixWireError extends Error {}
  HumanfixWireError.prototype.name = 'HumanfixWireError'
  // The candidate's answer is no value: its process ended, or what it sent is not plain data.
  class HumanfixCandidateError extends Error {}
  HumanfixCandidateError.prototype.name = 'HumanfixCandidateError'

  const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key)

  const describe = (value) => {
    if (typeof value !== 'object') return typeof value
    const made = Object.getPrototypeOf(value)?.constructor?.name
    return typeof made === 'string' && made ? `a ${made}` : 'an object'
  }

  const plain = (value, depth = 0) => {
    if (depth > DEPTH) throw new HumanfixWireError(`a value nested more than ${DEPTH} deep`)
    switch (typeof value) {
      case 'boolean':
      case 'string':
        return value
      case 'number':
        if (Number.isFinite(value) && !Object.is(value, -0)) return value
        return { number: Object.is(value, -0) ? '-0' : String(value) }
      case 'undefined':
        return { undefined: null }
      case 'bigint':
        return { bigint: value.toString() }
      case 'object': {
        if (value === null) return null
        if (Array.isArray(value)) {
          if (value.length > MESSAGE_BYTES) {
            throw new HumanfixWireError(`an array of ${value.length} items, more than a ` +
                                        'message may hold')
          }
          const items = []
          for (let index = 0; index < value.length; index++) {
            items.push(plain(value[index], depth + 1))
          }
          return items
        }
        const prototype = Object.getPrototypeOf(value)
        if (prototype === Object.prototype || prototype === null) {
          return { object: Object.keys(value).map((key) => [key, plain(value[key], depth + 1)]) }
        }
      }
    }
    throw new HumanfixWireError(`${describe(value)} is not plain data (null, undefined, ` +
                                'boolean, number, bigint, string, array, plain object)')
  }

  const rebuilt = (value, depth = 0) => {
    if (depth > DEPTH) throw new HumanfixWireError(`a value nested more than ${DEPTH} deep`)
    if (value === null || ['boolean', 'number', 'string'].includes(typeof value)) return value
    if (Array.isArray(value)) return value.map((item) => rebuilt(item, depth + 1))
    const keys = typeof value === 'object' ? Object.keys(value) : []
    if (keys.length !== 1) {
      throw new HumanfixWireError('a message holds a value that is not plain data')
    }
    const tag = keys[0]
    const inner = value[tag]
    if (tag === 'undefined' && inner === null) return undefined
    if (tag === 'number' && typeof inner === 'string' && own(SPECIAL_NUMBERS, inner)) {
      return SPECIAL_NUMBERS[inner]
    }
    if (tag === 'bigint' && typeof inner === 'string' && /^-?[0-9]{1,100000}$/.test(inner)) {
      return BigInt(inner)
    }
    if (tag === 'object' && Array.isArray(inner)) {
      const object = {}
      for (const pair of inner) {
        if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') {
          throw new HumanfixWireError('an object\'s item not given as [key, value]')
        }
        // Defined, never assigned: a key "__proto__" is an own key, as it was.
        Object.defineProperty(object, pair[0], { value: rebuilt(pair[1], depth + 1),
                                                 enumerable: true, writable: true,
                                                 configurable: true })
      }
      return object
    }
    throw new HumanfixWireError(`a message holds an unknown kind of value: ${
      JSON.stringify(tag).slice(0, 40)}`)
  }

  const retried = (operation) => {
    for (;;) {
      try {
        return operation()
      } catch (error) {
        if (error.code !== 'EAGAIN') throw error
        Atomics.wait(pause, 0, 0, 1) // a descriptor left non-blocking: wait for it
      }
    }
  }

  const send = (fd, message) => {
    const data = Buffer.from(JSON.stringify(message) + '\n', 'utf8')
    if (data.length > MESSAGE_BYTES) {
      throw new HumanfixWireError(`a message of ${data.length} bytes, more than the ` +
                                  `${MESSAGE_BYTES} a call or an answer may hold`)
    }
    let offset = 0
    while (offset < data.length) {
      offset += retried(() => fs.writeSync(fd, data, offset, data.length - offset))
    }
  }

  // One message at a time from a pipe, never more than the cap of one message; null once the
  // other side has closed its end.
  const reader = (fd) => {
    let chunks = []
    let pending = 0
    return () => {
      for (;;) {
        const last = chunks.length ? chunks[chunks.length - 1] : null
        const end = last ? last.indexOf(10) : -1
        if (end >= 0) {
          const whole = Buffer.concat(chunks)
          const at = pending - last.length + end
          const rest = whole.subarray(at + 1)
          chunks = rest.length ? [rest] : []
          pending = rest.length
          let message
          try {
            message = JSON.parse(whole.subarray(0, at).toString('utf8'))
          } catch (error) {
            throw new HumanfixWireError(`a message that is not JSON: ${error.message}`)
          }
          if (message === null || typeof message !== 'object' || Array.isArray(message)) {
            throw new HumanfixWireError('a message that is not a JSON object')
          }
          return message
        }
        if (pending > MESSAGE_BYTES) {
          throw new HumanfixWireError(`a message longer than ${MESSAGE_BYTES} bytes`)
        }
        const chunk = Buffer.alloc(1 << 16)
        const got = retried(() => fs.readSync(fd, chunk, 0, chunk.length, null))
        if (got === 0) {
          if (pending) throw new HumanfixWireError('a message cut off before its end')
          return null
        }
        chunks.push(chunk.subarray(0, got))
        pending += got
      }
    }
  }

  const raised = (error) => {
    let type = 'Error'
    let message = ''
    try {
      type = error instanceof Error ? String(error.name) : typeof error
      message = error instanceof Error ? String(error.message) : String(error)
    } catch {}
    return { raise: { type: type.slice(0, 100), args: [message.slice(0, 2000)] } }
  }

  const answered = (lookup, entryPoint, call) => {
    let value
    try {
      const args = rebuilt(call.args)
      if (!Array.isArray(args)) throw new HumanfixWireError('a call without its arguments')
      const found = lookup()
      if (typeof found !== 'function') throw new TypeError(`${entryPoint} is not a function`)
      value = found(...args)
    } catch (error) {
      try {
        process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
      } catch {}
      return raised(error)
    }
    try {
      return { value: plain(value) }
    } catch (error) {
      let why = 'it cannot be read'
      try {
        why = String(error.message)
      } catch {}
      return { refused: `${entryPoint} returned a value that cannot reach the tests: ${why}` }
    }
  }

  // The candidate's side: answers each call with what the entry point (looked up at each
  // call, as the tests' name would be) returns, until the tests close their end.
  const answer = (lookup, entryPoint) => {
    const read = reader(CALLS_IN)
    for (let call = read(); call !== null; call = read()) {
      send(CALLS_OUT, answered(lookup, entryPoint, call))
    }
  }

  const shown = (args) => {
    let text
    try {
      text = args.map((arg) => JSON.stringify(arg) ?? String(arg)).join(', ')
    } catch {
      text = '...'
    }
    return text.length <= SHOWN_CHARS ? text : text.slice(0, SHOWN_CHARS) + '...'
  }

  const thrown = (raise) => {
    const type = typeof raise?.type === 'string' ? raise.type.slice(0, 100) : 'Error'
    const message = Array.isArray(raise?.args) && typeof raise.args[0] === 'string'
      ? raise.args[0] : ''
    const error = own(ERRORS, type) ? new ERRORS[type](message) : new Error(message)
    if (!own(ERRORS, type)) error.name = type
    return error
  }

  // The tests' side: the entry point as the tests see it, which sends each call to the
  // candidate's process and gives back its answer rebuilt.
  const candidate = (entryPoint) => {
    const read = reader(CALLS_IN)
    return (...args) => {
      const what = `${entryPoint}(${shown(args)})`
      let answer
      try {
        send(CALLS_OUT, { args: args.map((arg) => plain(arg)), kwargs: [], limit: null })
        answer = read()
      } catch (error) {
        if (error.code !== 'EPIPE') {
          throw error instanceof HumanfixWireError
            ? new HumanfixCandidateError(`the candidate's answer to ${what} is unreadable: ` +
                                         error.message)
            : error
        }
        answer = null
      }
      if (answer === null) {
        throw new HumanfixCandidateError(`the candidate's process ended before it answered ${
          what}`)
      }
      if (own(answer, 'value')) {
        try {
          return rebuilt(answer.value)
        } catch (error) {
          throw new HumanfixCandidateError(`the candidate's answer to ${what} is not plain ` +
                                           `data: ${error.message}`)
        }
      }
      if (own(answer, 'raise')) throw thrown(answer.raise)
      const refused = answer.refused
      throw new HumanfixCandidateError(typeof refused === 'string' ? refused.slice(0, 1000)
        : `the candidate's answer to ${what} is not plain data`)
    }
  }

  return { answer, candidate, plain, rebuilt }
})()
