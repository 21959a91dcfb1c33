;;; sculpt.el --- Diffusion code completion through eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, languages, convenience

;;; Commentary:

;; Registers `sculpt lsp' with eglot for the supported major modes, and a
;; minor mode, `sculpt-mode', that asks the server for
;; textDocument/inlineCompletion (LSP 3.18) and shows the answer as ghost
;; text in an overlay: TAB accepts it, any other edit dismisses it.
;; Completion items (textDocument/completion) work through eglot's
;; completion-at-point as usual.
;;
;; A failed request, or the server reporting an error in sculpt/status, is
;; shown once in the echo area (and *Messages*) with `message', the first
;; time its text is seen.
;;
;;   (require 'sculpt)
;;   (add-hook 'c-mode-hook #'eglot-ensure)   ; or M-x eglot
;;   (add-hook 'eglot-managed-mode-hook #'sculpt-mode-maybe)

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)

(defgroup sculpt nil
  "Code completion from masked-diffusion models."
  :group 'tools
  :prefix "sculpt-")

(defcustom sculpt-program '("sculpt" "lsp")
  "The server command: `sculpt lsp' from PATH by default."
  :type '(repeat string))

(defcustom sculpt-settings nil
  "Server settings, a plist sent as initializationOptions.
Keys: :modelPath :device :weights :algorithm :threshold :eosPenalty :maxTokens
:contextBudget :debounceMs :enabledLanguages :holeMarker :lengthCandidates
:logLevel :repair :kvReuse :drafts :draftThreshold :maxDocumentBytes :indexMaxFiles
:autoPull :backend.
Nil: the server's defaults ($SCULPT_MODEL, else the model sculpt ships)."
  :type 'plist)

(defcustom sculpt-major-modes
  '((c-mode :language-id "c") (c-ts-mode :language-id "c")
    (c++-mode :language-id "cpp") (c++-ts-mode :language-id "cpp")
    (python-mode :language-id "python") (python-ts-mode :language-id "python")
    (js-mode :language-id "javascript") (js-ts-mode :language-id "javascript")
    (typescript-mode :language-id "typescript")
    (typescript-ts-mode :language-id "typescript")
    (sculpt-typescript-mode :language-id "typescript")
    (go-mode :language-id "go") (go-ts-mode :language-id "go")
    (rust-mode :language-id "rust") (rust-ts-mode :language-id "rust")
    (java-mode :language-id "java") (java-ts-mode :language-id "java")
    (sh-mode :language-id "shellscript") (bash-ts-mode :language-id "shellscript")
    (json-mode :language-id "json") (json-ts-mode :language-id "json"))
  "Major modes eglot starts sculpt for, with their LSP language ids."
  :type '(repeat sexp))

(defcustom sculpt-automatic t
  "Non-nil: ask for a completion after each edit in `sculpt-mode'.
Nil: only on \\[sculpt-complete]."
  :type 'boolean)

(defcustom sculpt-delay 0.05
  "Seconds after an edit before asking.
The server adds its own debounce, fitted to the typing rhythm."
  :type 'number)

(defface sculpt-ghost '((t :inherit shadow))
  "Face of the suggested text.")

;; ------------------------------------------------------------- the server

;; Emacs 28 has no TypeScript mode and Debian 12 packages none: without
;; one, .ts files open in a mode derived from js-mode so that eglot can
;; manage them (as language "typescript").  Any real TypeScript mode wins.
(define-derived-mode sculpt-typescript-mode js-mode "TypeScript"
  "JavaScript editing for .ts files, for want of a TypeScript mode.")

(unless (or (fboundp 'typescript-mode) (fboundp 'typescript-ts-mode)
            (assoc-default "x.ts" auto-mode-alist #'string-match))
  (add-to-list 'auto-mode-alist '("\\.ts\\'" . sculpt-typescript-mode)))

(defclass sculpt-eglot-server (eglot-lsp-server) ()
  "The sculpt language server.")

(defvar sculpt--shown-errors (make-hash-table :test #'eq :weakness 'key)
  "Server -> the keys of the errors it reported that the user was shown.")

(defconst sculpt--quiet-error-codes '(-32800 -32801 -32802)
  "JSON-RPC error codes that are part of normal typing, never shown:
the request was cancelled (by us or the server) or the document changed.")

(defun sculpt--error-key (text)
  "What makes two error messages the same error: TEXT without the LSP
method the server puts first (\"textDocument/inlineCompletion: \") and
with any number as #: automatic requests fail the same way on every
edit, with other counts."
  (replace-regexp-in-string
   "[0-9]+" "#"
   (replace-regexp-in-string
    "\\`\\(?:\\(?:textDocument\\|workspace\\|completionItem\\|codeAction\\)/[[:alpha:]/]+: \\)+"
    "" text t t)
   t t))

(defun sculpt--report-error (server text)
  "Show TEXT, an error from SERVER, unless it was shown before.
One whose key (`sculpt--error-key') contains this one's, or is contained
in it, counts as shown: a failed request repeats the server's status
message.  Returns non-nil when shown."
  (when (and (stringp text) (not (string-empty-p text)))
    (let ((key (sculpt--error-key text))
          (seen (gethash server sculpt--shown-errors)))
      (unless (cl-some (lambda (old) (or (string-search key old) (string-search old key))) seen)
        (puthash server (cons key seen) sculpt--shown-errors)
        (message "sculpt: %s" text)
        t))))

(cl-defmethod eglot-initialization-options ((_ sculpt-eglot-server))
  (or sculpt-settings eglot--{}))

(defvar sculpt-status nil
  "The last sculpt/status notification, a plist (:state :model :device ...).")

(cl-defmethod eglot-handle-notification
  ((server sculpt-eglot-server) (_ (eql 'sculpt/status)) &rest params)
  (setq sculpt-status params)
  (when (equal (plist-get params :state) "error")
    (sculpt--report-error server (plist-get params :message)))
  (force-mode-line-update t))

(defun sculpt--contact (&optional _interactive)
  "The eglot contact: our server class and `sculpt-program'."
  (cons 'sculpt-eglot-server sculpt-program))

;;;###autoload
(defun sculpt-register ()
  "Register sculpt with eglot for `sculpt-major-modes'."
  (setq eglot-server-programs
        (cons (cons sculpt-major-modes #'sculpt--contact)
              (cl-remove #'sculpt--contact eglot-server-programs :key #'cdr))))

(sculpt-register)

(defun sculpt--server ()
  "The sculpt server of this buffer, or nil."
  (let ((s (eglot-current-server)))
    (and (cl-typep s 'sculpt-eglot-server) s)))

;; ------------------------------------------------------------- ghost text

(defvar-local sculpt--overlay nil "The ghost text overlay.")
(defvar-local sculpt--item nil "The suggestion shown: (TEXT . COMMAND).")
(defvar-local sculpt--showing nil "Non-nil while a suggestion is shown.")
(defvar-local sculpt--inserting nil "Non-nil while we edit the buffer.")
(defvar-local sculpt--timer nil)
(defvar-local sculpt--pending nil
  "The number of the request in flight, or nil.")
(defvar sculpt--request-count 0 "Requests sent, for `sculpt--pending'.")

(defvar sculpt-ghost-map
  (let ((m (make-sparse-keymap)))
    (define-key m (kbd "TAB") #'sculpt-accept)
    (define-key m (kbd "<tab>") #'sculpt-accept)
    (define-key m (kbd "M-f") #'sculpt-accept-word)
    (define-key m (kbd "C-e") #'sculpt-accept-line)
    (define-key m (kbd "C-g") #'sculpt-dismiss)
    m)
  "Active while a suggestion is shown.")

(add-to-list 'minor-mode-map-alist (cons 'sculpt--showing sculpt-ghost-map))

(defun sculpt-suggestion ()
  "The suggested text shown at point, or nil."
  (car sculpt--item))

(defun sculpt--clear ()
  (when sculpt--overlay (delete-overlay sculpt--overlay))
  (setq sculpt--overlay nil sculpt--item nil sculpt--showing nil))

(defun sculpt--show (text command)
  "Shows TEXT after point; COMMAND is sent when it is accepted."
  (sculpt--clear)
  (let ((s (propertize text 'face 'sculpt-ghost)))
    ;; The cursor stays before the ghost text.
    (put-text-property 0 1 'cursor t s)
    (setq sculpt--overlay (make-overlay (point) (point) nil nil t))
    (overlay-put sculpt--overlay 'after-string s)
    (overlay-put sculpt--overlay 'sculpt t)
    (setq sculpt--item (cons text command) sculpt--showing t)))

(defun sculpt--on-result (buffer tick pos result)
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      ;; Show it only where it was asked for.
      (when (and (= tick (buffer-chars-modified-tick)) (= pos (point)))
        (let* ((items (if (vectorp result) result (plist-get result :items)))
               (item (and (> (length items) 0) (aref items 0)))
               (text (plist-get item :insertText)))
          (if (and (stringp text) (> (length text) 0))
              (sculpt--show text (plist-get item :command))
            (sculpt--clear)))))))

;;;###autoload
(defun sculpt-complete (&optional automatic)
  "Ask the server for an inline completion at point.
AUTOMATIC non-nil: triggerKind Automatic (the server debounces)."
  (interactive)
  (let ((server (sculpt--server)))
    (when server
      (eglot--signal-textDocument/didChange)
      ;; No $/cancelRequest for the one in flight: the server answers a
      ;; document's older request as superseded when a newer one comes.
      (let* ((buffer (current-buffer)) (tick (buffer-chars-modified-tick)) (pos (point))
             (n (setq sculpt--request-count (1+ sculpt--request-count)))
             (done (lambda ()
                     (when (buffer-live-p buffer)
                       (with-current-buffer buffer
                         (when (eql sculpt--pending n) (setq sculpt--pending nil)))))))
        (setq sculpt--pending n)
        (jsonrpc-async-request
         server :textDocument/inlineCompletion
         (append (eglot--TextDocumentPositionParams)
                 (list :context (list :triggerKind (if automatic 2 1))))
         :success-fn (lambda (result)
                       (funcall done)
                       (sculpt--on-result buffer tick pos result))
         :error-fn (lambda (err)
                     (funcall done)
                     ;; Stale or cancelled answers are expected while
                     ;; typing; others are shown once.
                     (unless (memq (plist-get err :code) sculpt--quiet-error-codes)
                       (sculpt--report-error
                        server (or (plist-get err :message) (format "%S" err)))))
         :timeout-fn done)))))

(defun sculpt-pending-p ()
  "Non-nil while a request from this buffer awaits its answer."
  sculpt--pending)

(defun sculpt--execute (command)
  (let ((server (sculpt--server)))
    (when (and server command)
      (jsonrpc-async-request server :workspace/executeCommand
                             (list :command (plist-get command :command)
                                   :arguments (or (plist-get command :arguments) []))
                             :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore))))

(defun sculpt--insert-part (part)
  "Insert PART, the start of the suggestion; keep the rest shown."
  (let* ((text (car sculpt--item)) (command (cdr sculpt--item))
         (rest (substring text (length part))))
    (sculpt--clear)
    (let ((sculpt--inserting t)) (insert part))
    (if (string-empty-p rest)
        (sculpt--execute command)
      (sculpt--show rest command))))

(defun sculpt-accept ()
  "Insert the whole suggestion."
  (interactive)
  (when sculpt--item (sculpt--insert-part (car sculpt--item))))

(defun sculpt-accept-word ()
  "Insert the next word of the suggestion."
  (interactive)
  (when sculpt--item
    (let ((text (car sculpt--item)))
      (sculpt--insert-part
       (if (string-match "\\`[[:space:]]*\\(?:\\(?:\\sw\\|\\s_\\)+\\|[^[:space:]]\\)" text)
           (match-string 0 text)
         text)))))

(defun sculpt-accept-line ()
  "Insert the rest of the current line of the suggestion."
  (interactive)
  (when sculpt--item
    (let* ((text (car sculpt--item))
           (nl (string-match "\n" text (if (string-prefix-p "\n" text) 1 0))))
      (sculpt--insert-part (if nl (substring text 0 nl) text)))))

(defun sculpt-dismiss ()
  "Hide the suggestion."
  (interactive)
  (when sculpt--item
    (sculpt--execute '(:command "sculpt.dismiss"))
    (sculpt--clear)))

(defun sculpt--after-change (_beg _end _len)
  "Any edit but ours dismisses the suggestion and, maybe, asks again."
  (unless sculpt--inserting
    (sculpt--clear)
    (when sculpt--timer (cancel-timer sculpt--timer))
    (setq sculpt--timer nil)
    (when sculpt-automatic
      (let ((buffer (current-buffer)))
        ;; A plain timer, not an idle one: it also runs in batch mode.
        (setq sculpt--timer
              (run-with-timer sculpt-delay nil
                              (lambda ()
                                (when (buffer-live-p buffer)
                                  (with-current-buffer buffer
                                    (setq sculpt--timer nil)
                                    (sculpt-complete t))))))))))

(defun sculpt--post-command ()
  (when (and sculpt--overlay (/= (point) (overlay-start sculpt--overlay)))
    (sculpt--clear)))

(defun sculpt-mode-line ()
  "A short mode-line text from `sculpt-status': the last latency, and
\"dropped\" when the last completion was dropped (see `sculpt-show-status')."
  (let ((st (plist-get sculpt-status :state)))
    (cond ((null st) " sculpt")
          ((equal st "ready")
           (let ((ms (plist-get sculpt-status :lastLatencyMs))
                 (dropped (string-prefix-p "dropped"
                                           (or (plist-get sculpt-status :lastOutcome) ""))))
             (cond ((and (numberp ms) dropped) (format " sculpt[%.0fms dropped]" ms))
                   ((numberp ms) (format " sculpt[%.0fms]" ms))
                   (t " sculpt"))))
          (t (format " sculpt[%s]" st)))))

(defun sculpt-status-text ()
  "The server's state, model, device, last latency, and what the last
completion came to (\"offered\", \"dropped: would not parse\", ...) with
this session's counts."
  (let ((s sculpt-status))
    (if (null s)
        "sculpt: no status yet"
      (let* ((ms (plist-get s :lastLatencyMs))
             (outcome (plist-get s :lastOutcome))
             (n (plist-get s :completions))
             (text (format "sculpt: %s, model %s on %s%s" (plist-get s :state)
                           (file-name-nondirectory (or (plist-get s :model) "?"))
                           (or (plist-get s :device) "?")
                           (if (numberp ms) (format ", last %.0f ms" ms) ""))))
        (when outcome
          (setq text (format "%s; last completion: %s (this session: %d answered, %d offered, %d dropped)"
                             text outcome (or (plist-get n :answered) 0)
                             (or (plist-get n :offered) 0) (or (plist-get n :dropped) 0))))
        (when (and (equal (plist-get s :state) "error") (plist-get s :message))
          (setq text (concat text ": " (plist-get s :message))))
        text))))

(defun sculpt-show-status ()
  "Show `sculpt-status-text' in the echo area."
  (interactive)
  (message "%s" (sculpt-status-text)))

;;;###autoload
(define-minor-mode sculpt-mode
  "Ghost-text completion from sculpt (TAB accepts, any other edit dismisses)."
  :lighter (:eval (sculpt-mode-line))
  (if sculpt-mode
      (progn
        (add-hook 'after-change-functions #'sculpt--after-change nil t)
        (add-hook 'post-command-hook #'sculpt--post-command nil t))
    (remove-hook 'after-change-functions #'sculpt--after-change t)
    (remove-hook 'post-command-hook #'sculpt--post-command t)
    (sculpt--clear)))

;;;###autoload
(defun sculpt-mode-maybe ()
  "Turn on `sculpt-mode' where eglot manages the buffer with sculpt."
  (when (sculpt--server) (sculpt-mode 1)))

(provide 'sculpt)
;;; sculpt.el ends here
