;;; emacs_real.el --- driven by test_emacs_real.py, _errors.py, _root.py  -*- lexical-binding: t; -*-
;; Batch Emacs 28 with Debian's elpa packages activated as an interactive
;; Emacs does at startup (eglot, go-mode), editors/emacs/sculpt.el set up as
;; its README says with no settings but the spec's temporary ones, `sculpt'
;; from PATH (the recording tap), the shipped model. eglot-ensure does not
;; fire in batch mode, so eglot is started as M-x eglot would be. The task
;; comes from $SCULPT_SPEC:
;;   mode "positions": open each file, put point at each position, ask
;;     (M-x sculpt-complete) and note what is shown;
;;   mode "errors": open one file, ask `requests' times, note *Messages*;
;;   mode "root": open one file and note eglot's project root and the
;;     server's index.
;; Writes what it saw to $SCULPT_RESULT and exits 0; the Python side judges.

(package-activate-all)
(add-to-list 'load-path (getenv "SCULPT_EMACS_PLUGIN"))
(require 'eglot)
(require 'json)
(require 'sculpt)

(defvar sculpt-test-spec
  (json-parse-string (with-temp-buffer
                       (insert-file-contents (getenv "SCULPT_SPEC"))
                       (buffer-string))
                     :object-type 'plist :array-type 'list :null-object nil))
(defvar sculpt-test-out nil "A plist, written as JSON at the end.")
(defvar sculpt-test-log nil)

(defun sculpt-test-note (fmt &rest args)
  (let ((s (apply #'format fmt args)))
    (message "%s" s)
    (push s sculpt-test-log)))

(defun sculpt-test-wait (pred seconds)
  "Run the event loop until PRED is non-nil or SECONDS pass."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (funcall pred)))

(defun sculpt-test-finish (code)
  (setq sculpt-test-out
        (append (list :log (vconcat (reverse sculpt-test-log))
                      :messages (with-current-buffer "*Messages*" (buffer-string)))
                sculpt-test-out))
  (with-temp-file (getenv "SCULPT_RESULT")
    (insert (json-encode sculpt-test-out)))
  (kill-emacs code))

(let ((settings (plist-get sculpt-test-spec :settings)))
  (when settings (setq sculpt-settings settings)))
(setq eglot-sync-connect 30
      eglot-autoshutdown nil)

(defun sculpt-test-open (path)
  "Visit PATH, start eglot there as M-x eglot would, wait for the model.
Returns non-nil when sculpt-mode is on with a model that loaded or failed."
  (find-file path)
  (unless (sculpt--server)
    (setq sculpt-status nil)
    (let ((contact (eglot--guess-contact)))
      (unless (eq (nth 2 contact) 'sculpt-eglot-server)
        (sculpt-test-note "eglot would not start sculpt in %s: %S" major-mode contact))
      (apply #'eglot contact)))
  (cond
   ((not (sculpt-test-wait #'sculpt--server 30))
    (sculpt-test-note "eglot does not manage %s with sculpt" path) nil)
   ((not (sculpt-test-wait (lambda () (member (plist-get sculpt-status :state) '("ready" "error")))
                           120))
    (sculpt-test-note "the model did not load") nil)
   (t (sculpt-mode-maybe) sculpt-mode)))

(defun sculpt-test-ask ()
  "Ask as M-x sculpt-complete does; wait for the answer; the text shown."
  (sculpt-complete)
  (if (sculpt-test-wait (lambda () (not (sculpt-pending-p))) 120)
      (sculpt-suggestion)
    (sculpt-test-note "no answer")
    nil))

(defun sculpt-test-goto (line col)
  (goto-char (point-min))
  (forward-line line)
  (forward-char col))

(condition-case err
    (let ((mode (plist-get sculpt-test-spec :mode)))
      (cond
       ((equal mode "positions")
        (let (results)
          (catch 'stop
            (dolist (p (plist-get sculpt-test-spec :positions))
              (unless (sculpt-test-open (plist-get p :path)) (throw 'stop nil))
              (sculpt-test-goto (plist-get p :line) (plist-get p :col))
              (let* ((shown (sculpt-test-ask))
                     (ov (cl-find-if (lambda (o) (overlay-get o 'sculpt))
                                     (overlays-in (point-min) (point-max)))))
                (push (list :file (plist-get p :file) :line (plist-get p :line)
                            :col (plist-get p :col) :mode (symbol-name major-mode)
                            :shown shown
                            :drawn (if (and ov (= (overlay-start ov) (point))
                                              (equal (substring-no-properties
                                                      (overlay-get ov 'after-string))
                                                     shown))
                                         t :json-false))
                      results)
                (sculpt-test-note "%s:%d:%d -> %S" (plist-get p :file) (1+ (plist-get p :line))
                                  (1+ (plist-get p :col)) shown)
                (sculpt--clear))))
          (sculpt-test-wait (lambda () nil) 0.3)
          (setq sculpt-test-out (list :positions (vconcat (nreverse results))
                                      :status sculpt-status
                                      :status_text (sculpt-status-text)
                                      :mode_line (sculpt-mode-line)))))
       ((equal mode "errors")
        (when (sculpt-test-open (plist-get sculpt-test-spec :path))
          (setq sculpt-test-out (list :status sculpt-status))
          (sculpt-test-goto (plist-get sculpt-test-spec :line) 0)
          (dotimes (_ (plist-get sculpt-test-spec :requests)) (sculpt-test-ask))))
       ((equal mode "root")
        (when (sculpt-test-open (plist-get sculpt-test-spec :path))
          (sculpt-test-wait (lambda () (member (plist-get (plist-get sculpt-status :index) :state)
                                               '("ready" "failed")))
                            60)
          (setq sculpt-test-out
                (list :root (expand-file-name
                             (project-root (eglot--project (eglot-current-server))))
                      :index (plist-get sculpt-status :index)))))))
  (error (sculpt-test-note "script error: %S" err)
         (sculpt-test-finish 1)))
(maphash (lambda (_project servers)
           (dolist (s servers) (ignore-errors (eglot-shutdown s))))
         eglot--servers-by-project)
(sculpt-test-finish 0)
