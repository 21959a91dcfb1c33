;;; emacs_test.el --- driven by test_emacs.py  -*- lexical-binding: t; -*-
;; Batch Emacs (not -Q: Debian's elpa path comes from site-start) with
;; editors/emacs/sculpt.el, eglot started explicitly, the real server and the
;; planted model that answers "defghijklmnopqrstuvwxyz" after "int abc".
;; Exits 0 when every check passes, 1 otherwise.

(add-to-list 'load-path (getenv "SCULPT_EMACS_PLUGIN"))
(require 'eglot)
(require 'sculpt)

(defconst sculpt-test-alphabet "defghijklmnopqrstuvwxyz")
(defvar sculpt-test-failures 0)

(defun sculpt-test-check (ok what &optional got)
  (if ok
      (message "ok   %s" what)
    (setq sculpt-test-failures (1+ sculpt-test-failures))
    (message "FAIL %s%s" what (if got (format ": got %S" got) ""))))

(defun sculpt-test-wait (pred seconds)
  "Run the event loop until PRED is non-nil or SECONDS pass."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall pred)))

(defun sculpt-test-finish ()
  (kill-emacs (if (= sculpt-test-failures 0) 0 1)))

(setq sculpt-program (list (getenv "SCULPT_BIN") "lsp")
      sculpt-settings (list :modelPath (getenv "SCULPT_TEST_MODEL") :lengthCandidates 4)
      eglot-sync-connect 10
      eglot-autoshutdown nil)

;; Errors: one key for the same error whatever its counts and LSP method.
(sculpt-test-check (equal (sculpt--error-key "textDocument/inlineCompletion: infill: 768 prefix")
                          "infill: # prefix")
                   "error key" (sculpt--error-key "textDocument/inlineCompletion: infill: 768 prefix"))
(sculpt-test-check (equal (sculpt--error-key "model/x: cannot open") "model/x: cannot open")
                   "error key: a path kept")
(let ((server (make-symbol "server")))
  (sculpt-test-check (sculpt--report-error server "/m/config.json: cannot open") "an error is shown")
  (sculpt-test-check (not (sculpt--report-error
                           server "textDocument/inlineCompletion: no model: /m/config.json: cannot open"))
                     "the same error through a request is not shown again")
  (sculpt-test-check (sculpt--report-error server "textDocument/inlineCompletion: infill: 768 x")
                     "another error is")
  (sculpt-test-check (not (sculpt--report-error server "textDocument/completion: infill: 632 x"))
                     "with other numbers and method it is the same"))

(condition-case err
    (progn
      (find-file (getenv "SCULPT_FIXTURE"))
      (sculpt-test-check (eq major-mode 'c-mode) "c-mode" major-mode)
      ;; eglot-ensure does not fire in batch mode: start eglot explicitly,
      ;; through the same guess as M-x eglot (our registration).
      (let ((contact (eglot--guess-contact)))
        (sculpt-test-check (eq (nth 2 contact) 'sculpt-eglot-server)
                           "eglot-server-programs picks sculpt" contact)
        (sculpt-test-check (equal (nth 4 contact) "c") "language id c" (nth 4 contact))
        (apply #'eglot contact))
      (sculpt-test-check (sculpt-test-wait (lambda () (sculpt--server)) 10)
                         "eglot manages the buffer with sculpt")
      (sculpt-test-check
       (sculpt-test-wait (lambda () (member (plist-get sculpt-status :state) '("ready" "error"))) 60)
       "sculpt/status arrived")
      (sculpt-test-check (equal (plist-get sculpt-status :state) "ready") "model ready" sculpt-status)
      (sculpt-mode-maybe)
      (sculpt-test-check sculpt-mode "sculpt-mode on")

      ;; Asked for: after "int abc" (point 8).
      (goto-char 8)
      (sculpt-complete)
      (sculpt-test-check (sculpt-test-wait #'sculpt-suggestion 60) "a suggestion arrived")
      (sculpt-test-check (equal (sculpt-suggestion) sculpt-test-alphabet) "the planted middle"
                         (sculpt-suggestion))
      (let ((ov (cl-find-if (lambda (o) (overlay-get o 'sculpt)) (overlays-in 1 (point-max)))))
        (sculpt-test-check (and ov (= (overlay-start ov) 8)
                                (equal (substring-no-properties (overlay-get ov 'after-string))
                                       sculpt-test-alphabet))
                           "overlay with the ghost text at point"))
      (sculpt-test-check (eq (key-binding (kbd "TAB")) 'sculpt-accept) "TAB accepts")
      (sculpt-accept)
      (sculpt-test-check (equal (buffer-string) (concat "int abc" sculpt-test-alphabet ";\n"))
                         "accepted into the buffer" (buffer-string))
      (sculpt-test-check (null (sculpt-suggestion)) "nothing left shown")
      (sculpt-test-check (not (eq (key-binding (kbd "TAB")) 'sculpt-accept)) "TAB is TAB again")

      ;; Automatic: an edit asks by itself; another edit dismisses.
      (delete-region 8 (+ 8 (length sculpt-test-alphabet)))
      (goto-char 8)
      (sculpt-test-check (sculpt-test-wait #'sculpt-suggestion 60) "automatic suggestion after an edit")
      (sculpt-test-check (equal (sculpt-suggestion) sculpt-test-alphabet) "automatic: the planted middle"
                         (sculpt-suggestion))
      (let ((sculpt-automatic nil)) (insert "x"))
      (sculpt-test-check (null (sculpt-suggestion)) "another edit dismisses")
      (delete-char -1)

      ;; Word and line acceptance, on a suggestion with words and lines.
      (setq sculpt-automatic nil)
      (let ((start (point)))
        (sculpt--show "foo(bar)\n  baz" nil)
        (sculpt-accept-word)
        (sculpt-test-check (equal (buffer-substring start (point)) "foo") "accept word"
                           (buffer-substring start (point)))
        (sculpt-test-check (equal (sculpt-suggestion) "(bar)\n  baz") "the rest stays shown"
                           (sculpt-suggestion))
        (sculpt-accept-line)
        (sculpt-test-check (equal (buffer-substring start (point)) "foo(bar)") "accept line"
                           (buffer-substring start (point)))
        (sculpt-accept-line)
        (sculpt-test-check (equal (buffer-substring start (point)) "foo(bar)\n  baz")
                           "accept the next line" (buffer-substring start (point)))
        (sculpt-test-check (null (sculpt-suggestion)) "all accepted")
        (delete-region start (point)))

      ;; completion-at-point through eglot (textDocument/completion).
      (goto-char 8)
      (eglot--signal-textDocument/didChange)
      (let* ((capf (eglot-completion-at-point))
             (all (and capf (all-completions "" (nth 2 capf)))))
        (sculpt-test-check (cl-some (lambda (c) (string-prefix-p "defghij" c)) all)
                           "completion-at-point offers the middle" all))
      (eglot-shutdown (eglot-current-server)))
  (error (sculpt-test-check nil "no error" err)))
(sculpt-test-finish)
